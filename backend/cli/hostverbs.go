package cli

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"conch/backend/host"
	"conch/backend/store"
)

func (v *verbs) hostsTest() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test NAME [--json]",
		Short: "Connect to a host and say what is there",
		Long: `Connect to the host and say who Conch runs as there and in which home, its system, the
Conch runner versions there and the coding-agent CLIs (claude, codex, gemini) on that
user's PATH. Exits 0 when the host is ready, 1 when it is not (unreachable, a key that
waits for your OK or changed, a password it wants), saying why.`,
		Example: "  conch hosts test devbox\n  conch hosts test devbox --json | jq .host.providers",
		Args:    exactly(1, "a host's name"), ValidArgsFunction: v.hostNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			h, err := v.findHost(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			var r host.TestResult
			if err := c.Do(cmd.Context(), http.MethodPost, hostPath(h.ID, "test"), nil, &r); err != nil {
				return v.explain(fmt.Errorf("hosts test %s: %w", args[0], err))
			}
			if asJSON {
				if err := printJSON(v.stdout, r); err != nil {
					return err
				}
			} else {
				printTest(v.stdout, r)
			}
			if r.Host.Status != store.HostReady {
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer ({host, runner, took}) as JSON")
	return cmd
}

// printTest says what a test found.
func printTest(w io.Writer, r host.TestResult) {
	h := r.Host
	fmt.Fprintf(w, "%s (%s): %s", h.Name, h.Target, statusWords(h.Status))
	if h.Reason != "" {
		fmt.Fprintf(w, ": %s", strings.TrimSuffix(h.Reason, "."))
	}
	fmt.Fprintf(w, ". (%d ms)\n", r.Took)
	switch h.Status {
	case store.HostUnknownKey:
		fmt.Fprintf(w, "Its key: %s\nIf that is the key of %s, accept it: conch hosts accept %s %s\n", h.Fingerprint, h.Target, shellWord(h.Name), h.Fingerprint)
	case store.HostReady:
		fmt.Fprintf(w, "As %s in %s on %s.\n", h.User, h.Home, h.System)
		runner := "not there yet (copied on first use)"
		if r.Runner.Present {
			runner = "there"
		}
		fmt.Fprintf(w, "Runner %s: %s.\n", r.Runner.Want, runner)
		if len(h.Providers) == 0 {
			fmt.Fprintln(w, "No coding-agent CLI found on its PATH.")
		}
		for _, p := range h.Providers {
			fmt.Fprintf(w, "  %s  %s  %s\n", p.ID, p.Version, p.Path)
		}
	}
}

func (v *verbs) hostsAccept() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "accept NAME FINGERPRINT [--json]",
		Short: "Accept the key a host showed (its SHA256 fingerprint)",
		Long: `Accept the host key waiting for your OK: FINGERPRINT must be the one 'conch hosts test'
showed (SHA256:…); compare it with the host's own first. The key goes into Conch's
known_hosts and the host can be tested again.`,
		Example: "  conch hosts accept devbox SHA256:…",
		Args:    exactly(2, "a host's name and the fingerprint of its key"), ValidArgsFunction: v.hostNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			h, err := v.findHost(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			body := host.AcceptRequest{Fingerprint: args[1]}
			if err := c.Do(cmd.Context(), http.MethodPost, hostPath(h.ID, "accept-key"), body, &h); err != nil {
				return v.explain(fmt.Errorf("hosts accept %s: %w", args[0], err))
			}
			if asJSON {
				return printJSON(v.stdout, h)
			}
			fmt.Fprintf(v.stdout, "Accepted the key of %s. Test it: conch hosts test %s\n", h.Name, shellWord(h.Name))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the host record as JSON")
	return cmd
}
