package brief

import (
	"strings"
	"unicode"
)

// Plain turns the app's short Markdown (a question's detail, a task's
// title or summary line: what the page shows through InlineMarkdown and
// InlineCode) into the plain text an OS surface shows, a notification or a
// tray menu, which would show the marks themselves. A code span gives its
// text, **strong** and *emphasis* their words, a link its text and, when
// that is not the address itself, the address in brackets; a heading's or
// a quote's leading marks go. Underscores are kept as they are: in Conch's
// texts they are file and variable names (__init__.py, my_var) far more
// often than emphasis. A mark with nothing to close it stays.
func Plain(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = plainInline(blockMarks(l))
	}
	return strings.Join(lines, "\n")
}

// blockMarks drops the marks a line starts with: "# " to "###### " and "> ".
func blockMarks(l string) string {
	t := strings.TrimLeft(l, " ")
	if h := strings.TrimLeft(t, "#"); len(t)-len(h) >= 1 && len(t)-len(h) <= 6 && strings.HasPrefix(h, " ") {
		return strings.TrimLeft(h, " ")
	}
	for strings.HasPrefix(t, ">") {
		t = strings.TrimLeft(t[1:], " ")
		l = t
	}
	return l
}

func plainInline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if n, text, ok := codeSpan(s[i:]); ok {
			b.WriteString(text)
			i += n
			continue
		}
		if n, inner, ok := delimited(s[i:], "**"); ok {
			b.WriteString(plainInline(inner))
			i += n
			continue
		}
		if n, inner, ok := delimited(s[i:], "*"); ok && !strings.Contains(inner, "*") {
			b.WriteString(plainInline(inner))
			i += n
			continue
		}
		if n, text, href, ok := link(s[i:]); ok {
			text = plainInline(text)
			b.WriteString(text)
			if text != href {
				b.WriteString(" (" + href + ")")
			}
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// codeSpan reads a code span at the start of s: a run of backticks, text,
// and a run of as many. Its text loses one space at each end when it has
// both (so "“ `x` “" can show backticks), as Markdown says.
func codeSpan(s string) (n int, text string, ok bool) {
	ticks := len(s) - len(strings.TrimLeft(s, "`"))
	if ticks == 0 {
		return 0, "", false
	}
	fence := s[:ticks]
	for j := ticks; j < len(s); {
		k := strings.Index(s[j:], fence)
		if k < 0 {
			return 0, "", false
		}
		end := j + k
		run := len(s[end:]) - len(strings.TrimLeft(s[end:], "`"))
		if run != ticks {
			j = end + run
			continue
		}
		text = s[ticks:end]
		if text == "" {
			return 0, "", false
		}
		if len(text) >= 2 && text[0] == ' ' && text[len(text)-1] == ' ' && strings.TrimSpace(text) != "" {
			text = text[1 : len(text)-1]
		}
		return end + ticks, text, true
	}
	return 0, "", false
}

// delimited reads mark, text and mark at the start of s: the text neither
// starts nor ends with a space, as Markdown's emphasis asks.
func delimited(s, mark string) (n int, inner string, ok bool) {
	if !strings.HasPrefix(s, mark) || len(s) <= len(mark) || isSpace(s[len(mark)]) {
		return 0, "", false
	}
	for j := len(mark) + 1; j+len(mark) <= len(s); j++ {
		if strings.HasPrefix(s[j:], mark) && !isSpace(s[j-1]) {
			return j + len(mark), s[len(mark):j], true
		}
	}
	return 0, "", false
}

// link reads [text](href) at the start of s.
func link(s string) (n int, text, href string, ok bool) {
	if !strings.HasPrefix(s, "[") {
		return 0, "", "", false
	}
	mid := strings.Index(s, "](")
	if mid < 2 || strings.Contains(s[1:mid], "]") {
		return 0, "", "", false
	}
	end := strings.IndexByte(s[mid+2:], ')')
	if end < 1 {
		return 0, "", "", false
	}
	href = s[mid+2 : mid+2+end]
	if strings.IndexFunc(href, unicode.IsSpace) >= 0 {
		return 0, "", "", false
	}
	return mid + 3 + end, s[1:mid], href, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
