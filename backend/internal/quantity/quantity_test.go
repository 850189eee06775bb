package quantity_test

import (
	"testing"

	"conch/backend/internal/quantity"
)

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 files are"}, {1, "1 file is"}, {2, "2 files are"}} {
		if got := quantity.Plural(c.n, "file is", "files are"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"},
		{1023, "1023 bytes"},
		{1 << 10, "1 KiB"},
		{32 << 10, "32 KiB"},
		{1<<20 - 1, "1024 KiB"},
		{3 << 19, "1.5 MiB"},
		{5 << 30, "5.0 GiB"},
	} {
		if got := quantity.Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
