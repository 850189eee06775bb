// Package quantity says a count or a size in words, the same way wherever
// Conch shows one to a person: "1 file", "3 files", "1.5 GiB".
package quantity

import "fmt"

// Plural is n followed by one when n is 1, else by many: Plural(2, "task
// is", "tasks are") is "2 tasks are".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Bytes is a size in binary units: whole KiB, one decimal of MiB and GiB,
// and below 1 KiB the bytes themselves.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
