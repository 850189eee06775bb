package chat

import (
	"strings"

	"conch/backend/pref"
	"conch/backend/provider"
)

// Price is what a model costs, in USD per million tokens.
type Price = pref.Price

// Prices maps a model id, or the start of one ("claude-sonnet-4"), to its
// price. Models not in the table cost nothing, like local models and the
// shell; so do models of providers on this computer.
type Prices map[string]Price

// DefaultPrices are the preferences' default price table.
func DefaultPrices() Prices { return Prices(pref.DefaultPrices()) }

// Cost is what usage on model costs: the provider's own figure when it gave
// one, else tokens × the price of the longest table entry model (or, for
// "vendor/model", the part after the slash) starts with. Prefixes may
// overestimate a smaller sibling ("gpt-5" for "gpt-5-nano"), which errs on
// the safe side of a budget.
func (p Prices) Cost(model string, u provider.Usage) float64 {
	if u.CostUSD > 0 {
		return u.CostUSD
	}
	// OpenRouter names models "vendor/model".
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		if _, ok := p[model]; !ok {
			model = model[i+1:]
		}
	}
	best, found := "", false
	for k := range p {
		if strings.HasPrefix(model, k) && len(k) >= len(best) {
			best, found = k, true
		}
	}
	if !found {
		return 0
	}
	pr := p[best]
	cacheRead := pr.CacheRead
	if cacheRead == 0 {
		cacheRead = pr.Input
	}
	return (float64(u.InputTokens+u.CacheWriteTokens)*pr.Input +
		float64(u.CacheReadTokens)*cacheRead +
		float64(u.OutputTokens)*pr.Output) / 1e6
}
