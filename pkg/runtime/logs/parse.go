// Package logs reads container logs written by a CRI runtime: files of
// lines "<RFC3339Nano time> <stream> <tags> <content>", where the tag P
// marks a partial line continued by the next one and F a full line. It
// serves the kubelet's /containerLogs endpoint: tail, since, timestamps,
// byte limits and follow, across the rotated files of one container
// (<n>.log.<timestamp>, optionally gzip-compressed) and the current one.
package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Stream is the stream a log line was written to.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Message is one line of a CRI log file.
type Message struct {
	Time   time.Time
	Stream Stream
	// Partial is true for a P line: Content continues in the next line of
	// the same stream.
	Partial bool
	// Content is the line's payload without the file's line terminator.
	Content []byte
}

var errMalformed = errors.New("malformed CRI log line")

// ParseLine parses one line of a CRI log file, with or without its
// trailing newline. The content may be empty.
func ParseLine(line []byte) (Message, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var m Message
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return m, fmt.Errorf("%w: no timestamp separator", errMalformed)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return m, fmt.Errorf("%w: timestamp %q: %v", errMalformed, ts, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return m, fmt.Errorf("%w: no stream separator", errMalformed)
	}
	switch Stream(stream) {
	case Stdout, Stderr:
	default:
		return m, fmt.Errorf("%w: unknown stream %q", errMalformed, stream)
	}
	// Tags are ":"-separated; the first says partial (P) or full (F). The
	// content after the tags' separator may be empty, and a full line
	// with empty content may even lack that separator.
	tags, content, _ := bytes.Cut(rest, []byte(" "))
	first, _, _ := bytes.Cut(tags, []byte(":"))
	switch string(first) {
	case "P":
		m.Partial = true
	case "F":
	default:
		return m, fmt.Errorf("%w: unknown tag %q", errMalformed, tags)
	}
	m.Time, m.Stream, m.Content = t, Stream(stream), content
	return m, nil
}

// Line is one logical log line: consecutive partial messages of a stream
// joined with the full message ending them.
type Line struct {
	// Time is the time of the line's first part.
	Time   time.Time
	Stream Stream
	// Content includes the final newline unless the line is still
	// incomplete (the log ended within a partial line).
	Content []byte
	// seq orders lines by their last part: the number of messages read
	// before it.
	seq int64
}

// joiner assembles logical lines from messages. Partial messages of the
// two streams are kept apart, as a runtime may interleave them.
type joiner struct {
	pending map[Stream]*Line
	seq     int64
}

// add takes one message and returns the completed line, if any.
func (j *joiner) add(m Message) (Line, bool) {
	if j.pending == nil {
		j.pending = map[Stream]*Line{}
	}
	p := j.pending[m.Stream]
	if p == nil {
		p = &Line{Time: m.Time, Stream: m.Stream}
		j.pending[m.Stream] = p
	}
	p.Content = append(p.Content, m.Content...)
	p.seq = j.seq
	j.seq++
	if m.Partial {
		return Line{}, false
	}
	p.Content = append(p.Content, '\n')
	delete(j.pending, m.Stream)
	return *p, true
}

// flush returns the incomplete lines still pending, oldest first.
func (j *joiner) flush() []Line {
	var out []Line
	for _, s := range []Stream{Stdout, Stderr} {
		if p := j.pending[s]; p != nil {
			out = append(out, *p)
		}
	}
	if len(out) == 2 && out[1].Time.Before(out[0].Time) {
		out[0], out[1] = out[1], out[0]
	}
	j.pending = nil
	return out
}
