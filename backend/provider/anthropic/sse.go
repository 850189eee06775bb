package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"conch/backend/provider"
)

// maxLine bounds one SSE line. Real chunks pass 64 KiB (a long tool
// argument arrives whole from some servers), but a line of many megabytes is
// a broken stream, not a reply.
const maxLine = 16 << 20

// errLineTooLong is returned by sseReader when a line passes maxLine.
var errLineTooLong = errors.New("a line of the stream passed 16 MiB")

// sseEvent is one server-sent event: its optional name and its data lines
// joined with "\n".
type sseEvent struct {
	name string
	data []byte
}

// sseReader reads server-sent events. It uses a bufio.Reader rather than a
// Scanner so that lines are bounded by maxLine, not by a 64 KiB token.
type sseReader struct {
	r    *bufio.Reader
	line []byte
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next event with data. Comment lines (": keep-alive") and
// unknown fields are skipped. It returns io.EOF when the stream ends between
// events; an event cut off by the end of the stream is still returned, since
// some servers omit the final blank line.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				return ev, nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev.name = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			hasData = true
		}
	}
}

// readLine returns one line without its line ending; the slice is valid
// until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if len(s.line) > maxLine {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				break
			}
			return nil, err
		}
		break
	}
	line := bytes.TrimSuffix(s.line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// emitter sends a stream's events, giving up when ctx ends so that a caller
// who stopped reading never leaks the goroutine.
type emitter struct {
	ctx context.Context
	ch  chan<- provider.Event
}

// send delivers ev and reports whether the stream should go on.
func (e emitter) send(ev provider.Event) bool {
	select {
	case e.ch <- ev:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// finalGrace is how long the last event waits for room once ctx has
// ended: long enough for a reader still draining, short enough that a
// reader who left does not hold the goroutine.
const finalGrace = 500 * time.Millisecond

// final delivers the last event: blocking while ctx lives, then for at most
// finalGrace.
func (e emitter) final(ev provider.Event) {
	select {
	case e.ch <- ev:
		return
	case <-e.ctx.Done():
	}
	t := time.NewTimer(finalGrace)
	defer t.Stop()
	select {
	case e.ch <- ev:
	case <-t.C:
	}
}
