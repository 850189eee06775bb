package agentcli

import "conch/backend/provider"

// New returns the provider for the CLI whose command is bin ("claude",
// "codex", "gemini"), or nil for another.
func New(bin string, cfg Config) provider.Provider {
	switch bin {
	case "claude":
		return NewClaude(cfg)
	case "codex":
		return NewCodex(cfg)
	case "gemini":
		return NewGemini(cfg)
	}
	return nil
}
