package chat

import (
	"strings"

	"conch/backend/provider"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheRead is the price of cached input; 0 uses Input.
	CacheRead float64 `json:"cacheRead,omitempty"`
}

// Prices maps a model id, or the start of one ("claude-sonnet-4"), to its
// price. Models not in the table cost nothing, like local models and the
// shell; so do models of providers on this computer.
type Prices map[string]Price

// DefaultPrices are list prices of common hosted models (USD per million
// tokens) as of late 2025; preferences may override them later.
func DefaultPrices() Prices {
	return Prices{
		"gpt-4o":            {Input: 2.5, Output: 10},
		"gpt-4o-mini":       {Input: 0.15, Output: 0.6},
		"gpt-4.1":           {Input: 2, Output: 8},
		"gpt-4.1-mini":      {Input: 0.4, Output: 1.6},
		"gpt-5":             {Input: 1.25, Output: 10},
		"gpt-5-mini":        {Input: 0.25, Output: 2},
		"o3":                {Input: 2, Output: 8},
		"claude-opus-4":     {Input: 15, Output: 75},
		"claude-sonnet-4":   {Input: 3, Output: 15},
		"claude-3-7-sonnet": {Input: 3, Output: 15},
		"claude-3-5-haiku":  {Input: 0.8, Output: 4},
		"claude-haiku-4":    {Input: 1, Output: 5},
	}
}

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
