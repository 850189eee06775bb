package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"conch/backend/client"
	"conch/backend/host"
	"conch/backend/store"
)

// hostWords says a host's status for a person.
var hostWords = map[store.HostStatus]string{
	store.HostNew:         "not tested yet",
	store.HostReady:       "ready",
	store.HostUnknownKey:  "its key waits for your OK",
	store.HostKeyChanged:  "its key changed: refused",
	store.HostNoKey:       "it wants a password: set up a key",
	store.HostUnreachable: "unreachable",
}

func statusWords(s store.HostStatus) string {
	if w, ok := hostWords[s]; ok {
		return w
	}
	return string(s)
}

// hostPath is the API path of host id, and of its action when given.
func hostPath(id string, action ...string) string {
	p := "/api/hosts/" + url.PathEscape(id)
	for _, a := range action {
		p += "/" + a
	}
	return p
}

// hostID is the id a new host called name gets: the name in lower case,
// every run of other characters a dash, at most 40 characters.
func hostID(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.TrimRight(b.String(), "-")
	if len(id) > 40 {
		id = strings.TrimRight(id[:40], "-")
	}
	return id
}

// hostList is GET /api/hosts, raw and read.
func hostList(ctx context.Context, c *client.Client) (json.RawMessage, host.List, error) {
	var raw json.RawMessage
	var l host.List
	if err := c.Do(ctx, http.MethodGet, "/api/hosts", nil, &raw); err != nil {
		return nil, l, err
	}
	err := json.Unmarshal(raw, &l)
	return raw, l, err
}

// findHost is the host called name (or with that id) on the running Conch.
func (v *verbs) findHost(ctx context.Context, c *client.Client, name string) (store.Host, error) {
	_, l, err := hostList(ctx, c)
	if err != nil {
		return store.Host{}, v.explain(err)
	}
	for _, h := range l.Hosts {
		if h.Name == name {
			return h, nil
		}
	}
	for _, h := range l.Hosts {
		if h.ID == name {
			return h, nil
		}
	}
	return store.Host{}, fail(ExitFailed, "no host is called %q; 'conch hosts ls' lists them", name)
}

// hostNames completes a host's name from the running Conch's list.
func (v *verbs) hostNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := v.dial()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, l, err := hostList(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, h := range l.Hosts {
		names = append(names, h.Name+"\t"+oneLine(h.Target+": "+statusWords(h.Status), 60))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// exactly takes n arguments, named in what, as a usage error otherwise.
func exactly(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s takes %s (got %d arguments)", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

func (v *verbs) hosts() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "The other computers Conch reaches over SSH",
		Long: `The hosts: other computers Conch reaches with this computer's OpenSSH, as you (BatchMode:
a key, never a password). Add one, test its connection (who Conch runs as there, the
system, the coding-agent CLIs found), accept its key when it is new to you, remove it.
NAME is the host's name as 'conch hosts ls' shows it.`,
		Example: `  conch hosts add devbox me@devbox.lan:22
  conch hosts test devbox
  conch hosts accept devbox SHA256:…`,
		GroupID: "drive", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(v.hostsAdd(), v.hostsLs(), v.hostsRm(), v.hostsTest(), v.hostsAccept())
	for _, c := range cmd.Commands() {
		c.DisableFlagsInUseLine = true
	}
	return cmd
}

func (v *verbs) hostsAdd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add NAME TARGET [--json]",
		Short: "Add a host",
		Long: `Add a host called NAME at TARGET: an ssh config alias (devbox) or user@host:port (user
and port optional, [::1] for IPv6). It is not connected to until you test it.`,
		Example: "  conch hosts add devbox devbox\n  conch hosts add 'build box' ci@10.0.0.7:2222",
		Args:    exactly(2, "a name and a target"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := hostID(args[0])
			if id == "" {
				return fail(ExitUsage, "hosts add: a host's name needs a letter or a digit (got %q)", args[0])
			}
			c, err := v.dial()
			if err != nil {
				return err
			}
			var h store.Host
			body := host.PutRequest{Name: args[0], Target: args[1]}
			if err := c.Do(cmd.Context(), http.MethodPut, hostPath(id), body, &h); err != nil {
				return v.explain(fmt.Errorf("hosts add %s: %w", args[0], err))
			}
			if asJSON {
				return printJSON(v.stdout, h)
			}
			fmt.Fprintf(v.stdout, "Added %s (%s). Test it: conch hosts test %s\n", h.Name, h.Target, shellWord(h.Name))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the host record as JSON")
	return cmd
}

func (v *verbs) hostsLs() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "ls [--json]", Short: "List the hosts", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			raw, l, err := hostList(cmd.Context(), c)
			if err != nil {
				return v.explain(err)
			}
			if asJSON {
				return printJSON(v.stdout, raw)
			}
			printHosts(v.stdout, l.Hosts)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the API's answer ({hosts, runner}) as JSON")
	return cmd
}

// printHosts writes one line a host: its name, status, target, system
// and the CLIs found there.
func printHosts(w io.Writer, hosts []store.Host) {
	if len(hosts) == 0 {
		fmt.Fprintln(w, "No hosts. Add one: conch hosts add NAME TARGET")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tTARGET\tSYSTEM\tCLIS")
	for _, h := range hosts {
		var clis []string
		for _, p := range h.Providers {
			clis = append(clis, p.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Name, statusWords(h.Status), h.Target, dash(h.System), dash(strings.Join(clis, ",")))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shellWord is s as one word for a shell to read back.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (v *verbs) hostsRm() *cobra.Command {
	return &cobra.Command{
		Use: "rm NAME", Short: "Remove a host (Conch's known_hosts keeps its key)",
		Example: "  conch hosts rm devbox", Args: exactly(1, "a host's name"), ValidArgsFunction: v.hostNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := v.dial()
			if err != nil {
				return err
			}
			h, err := v.findHost(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			if err := c.Do(cmd.Context(), http.MethodDelete, hostPath(h.ID), nil, nil); err != nil {
				return v.explain(fmt.Errorf("hosts rm %s: %w", args[0], err))
			}
			fmt.Fprintf(v.stdout, "Removed %s.\n", h.Name)
			return nil
		},
	}
}
