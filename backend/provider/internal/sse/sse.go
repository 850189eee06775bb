// Package sse reads server-sent events (the model APIs' streaming format) and
// hands a stream's events to its reader without leaking a goroutine when
// the reader leaves.
package sse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"conch/backend/provider"
)

// MaxLine bounds one SSE line. Real chunks pass 64 KiB (a long tool
// argument arrives whole from some servers), but a line of many megabytes is
// a broken stream, not a reply.
const MaxLine = 16 << 20

// ErrLineTooLong is returned by Reader when a line passes MaxLine.
var ErrLineTooLong = errors.New("a line of the stream passed 16 MiB")

// Event is one server-sent event: its optional name and its data lines
// joined with "\n".
type Event struct {
	Name string
	Data []byte
}

// Reader reads server-sent events. It uses a bufio.Reader rather than a
// Scanner so that lines are bounded by MaxLine, not by a 64 KiB token.
type Reader struct {
	r    *bufio.Reader
	line []byte
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event with data. Comment lines (": keep-alive") and
// unknown fields are skipped. It returns io.EOF when the stream ends between
// events; an event cut off by the end of the stream is still returned, since
// some servers omit the final blank line.
func (s *Reader) Next() (Event, error) {
	var ev Event
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && hasData {
				return ev, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev.Name = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
		}
	}
}

// readLine returns one line without its line ending; the slice is valid
// until the next call.
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if len(s.line) > MaxLine {
			return nil, ErrLineTooLong
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

// Emitter sends a stream's events, giving up when ctx ends so that a caller
// who stopped reading never leaks the goroutine.
type Emitter struct {
	Ctx context.Context
	Ch  chan<- provider.Event
}

// Send delivers ev and reports whether the stream should go on.
func (e Emitter) Send(ev provider.Event) bool {
	select {
	case e.Ch <- ev:
		return true
	case <-e.Ctx.Done():
		return false
	}
}

// finalGrace is how long the last event waits for room once ctx has
// ended: long enough for a reader still draining, short enough that a
// reader who left does not hold the goroutine.
const finalGrace = 500 * time.Millisecond

// Final delivers the last event: blocking while ctx lives, then for at most
// finalGrace.
func (e Emitter) Final(ev provider.Event) {
	select {
	case e.Ch <- ev:
		return
	case <-e.Ctx.Done():
	}
	t := time.NewTimer(finalGrace)
	defer t.Stop()
	select {
	case e.Ch <- ev:
	case <-t.C:
	}
}
