package chat

import (
	"math"
	"testing"

	"conch/backend/provider"
)

func TestPricesCost(t *testing.T) {
	p := Prices{"claude-sonnet-4": {Input: 3, Output: 15}, "claude-sonnet-4-5": {Input: 4, Output: 20}, "gpt-4o": {Input: 2.5, Output: 10, CacheRead: 1.25}}
	for _, tc := range []struct {
		model string
		u     provider.Usage
		want  float64
	}{
		{"claude-sonnet-4-20250514", provider.Usage{InputTokens: 1e6, OutputTokens: 1e6}, 18},
		{"claude-sonnet-4-5-x", provider.Usage{InputTokens: 1e6}, 4}, // the longest prefix wins
		{"gpt-4o", provider.Usage{InputTokens: 1e6, CacheReadTokens: 1e6}, 3.75},
		{"llama3.2", provider.Usage{InputTokens: 1e6}, 0},
		{"anthropic/claude-sonnet-4", provider.Usage{OutputTokens: 1e6}, 15},
		{"anything", provider.Usage{InputTokens: 5, CostUSD: 0.12}, 0.12},
	} {
		if got := p.Cost(tc.model, tc.u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Cost(%s, %+v) = %v, want %v", tc.model, tc.u, got, tc.want)
		}
	}
}
