package brief

import "testing"

func TestFirstLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"  first  \nsecond", "first"},
		{"\n\n  after blanks\nmore", "after blanks"},
		{"ends in a return\r\nnext", "ends in a return"},
	} {
		if got := FirstLine(c.in); got != c.want {
			t.Errorf("FirstLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven runes", 10, "eleven ru…"},
		{"two words here", 5, "two…"},
		{"héllo wörld", 7, "héllo…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"ab", 1, "…"},
		{"ab", 0, "…"},
	} {
		got := Clip(c.in, c.n)
		if got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if r := []rune(got); c.n > 0 && len(r) > c.n {
			t.Errorf("Clip(%q, %d) = %q: %d runes", c.in, c.n, got, len(r))
		}
	}
}
