package ask_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"conch/backend/ask"
)

func TestNewChangeKeepsSmallSidesWhole(t *testing.T) {
	c := ask.NewChange("a.txt", "old\n", "new\n", false)
	if c.Path != "a.txt" || c.Before != "old\n" || c.After != "new\n" || c.Truncated || c.New {
		t.Fatalf("change %+v", c)
	}
}

func TestNewChangeCutsLongSidesOnALineEnd(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	long := strings.Repeat(line, ask.MaxChange/len(line)+10)
	c := ask.NewChange("big.txt", "", long, true)
	if !c.Truncated || !c.New || c.Before != "" {
		t.Fatalf("change %+v", c)
	}
	if len(c.After) > ask.MaxChange || !strings.HasSuffix(c.After, "\n") || !strings.HasPrefix(long, c.After) {
		t.Fatalf("after is %d bytes, ends %q", len(c.After), c.After[len(c.After)-5:])
	}
}

func TestNewChangeNeverCutsACharacter(t *testing.T) {
	long := strings.Repeat("é", ask.MaxChange) // no line ends at all
	c := ask.NewChange("é.txt", long, "", false)
	if !c.Truncated || !utf8.ValidString(c.Before) || len(c.Before) > ask.MaxChange || len(c.Before) < ask.MaxChange-4 {
		t.Fatalf("before: %d bytes, valid %v", len(c.Before), utf8.ValidString(c.Before))
	}
}
