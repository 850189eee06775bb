package brief

import "testing"

func TestPlain(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"no marks at all", "no marks at all"},
		{"Run `touch /tmp/x` in ~?", "Run touch /tmp/x in ~?"},
		{"Run `` a `b` c `` now", "Run a `b` c now"},
		{"Run `` `x` ``", "Run `x`"},
		{"an ` alone stays", "an ` alone stays"},
		{"**Done**: 3 files *changed*", "Done: 3 files changed"},
		{"**bold with `code` inside**", "bold with code inside"},
		{"`**not bold in code**`", "**not bold in code**"},
		{"rm *.o *.a stays", "rm *.o *.a stays"},
		{"2 * 3 * 4", "2 * 3 * 4"},
		{"Edit __init__.py and my_var_name?", "Edit __init__.py and my_var_name?"},
		{"see [the docs](https://example.org/d)", "see the docs (https://example.org/d)"},
		{"[https://x.org](https://x.org)", "https://x.org"},
		{"[not a link] (x)", "[not a link] (x)"},
		{"## Summary\n> quoted `x`\n#hashtag", "Summary\nquoted x\n#hashtag"},
	} {
		if got := Plain(c.in); got != c.want {
			t.Errorf("Plain(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
