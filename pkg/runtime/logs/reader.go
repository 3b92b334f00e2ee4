package logs

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Options say which part of a log to return and how; they are
// v1.PodLogOptions resolved against the time of the request.
type Options struct {
	// Follow keeps streaming new lines until the container stops or the
	// context ends.
	Follow bool
	// TailLines, when >= 0, starts with the last TailLines lines.
	TailLines int64
	// Since, when not zero, leaves out lines older than it.
	Since time.Time
	// Timestamps prefixes each line with its RFC3339Nano time and a space.
	Timestamps bool
	// LimitBytes, when > 0, stops after that many bytes of output.
	LimitBytes int64
}

// NewOptions resolves PodLogOptions at time now (sinceSeconds is relative
// to it). Previous and Container are the caller's business.
func NewOptions(o *v1.PodLogOptions, now time.Time) Options {
	opts := Options{TailLines: -1}
	if o == nil {
		return opts
	}
	opts.Follow = o.Follow
	opts.Timestamps = o.Timestamps
	if o.TailLines != nil {
		opts.TailLines = *o.TailLines
	}
	if o.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	} else if o.SinceTime != nil {
		opts.Since = o.SinceTime.Time
	}
	if o.LimitBytes != nil {
		opts.LimitBytes = *o.LimitBytes
	}
	return opts
}

// followPoll bounds how long a follower waits without a file event before
// it checks the file and the container again (inotify can miss a rotation
// done by another mount namespace).
var followPoll = time.Second

// readWhole reads every file from its start, as the reference the tests
// hold the skipping reader to.
var readWhole = false

// errLimit ends a read once LimitBytes are written.
var errLimit = errors.New("log byte limit reached")

// RotatedFiles returns the rotated predecessors of the log file at path,
// oldest first: siblings named <path>.<suffix> (upstream names them
// <n>.log.<YYYYMMDD-hhmmss>, compressed ones end in .gz), without the
// temporary files of a rotation in progress (.tmp).
func RotatedFiles(path string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(path) + "."
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, prefix) || strings.HasSuffix(n, ".tmp") {
			continue
		}
		out = append(out, filepath.Join(filepath.Dir(path), n))
	}
	sort.Strings(out)
	return out, nil
}

// Read writes the log of one container instance, whose current file is
// path, to stdout and stderr by the stream of each line; a nil writer
// leaves that stream out. Rotated files come first. With opts.Follow it
// then streams what is appended, across rotations of the file, until the
// context ends or alive reports that the container has stopped (then the
// rest of the file is written). alive may be nil when not following.
func Read(ctx context.Context, path string, opts Options, stdout, stderr io.Writer, alive func() bool) error {
	w := &writer{out: map[Stream]io.Writer{Stdout: stdout, Stderr: stderr}, opts: opts, remaining: opts.LimitBytes}
	err := read(ctx, path, opts, w, alive)
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}

func read(ctx context.Context, path string, opts Options, w *writer, alive func() bool) error {
	rotated, err := RotatedFiles(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	// The current file is opened once: where a tail starts in it is found
	// and read in the same file, even if it is rotated meanwhile.
	cur, curErr := os.Open(path)
	if curErr != nil && !(os.IsNotExist(curErr) && len(rotated) > 0 && !opts.Follow) {
		return curErr
	}
	if cur != nil {
		defer func() { cur.Close() }()
	}
	var start position
	var tail *ring
	if opts.TailLines >= 0 {
		tail = newRing(opts.TailLines)
	}
	if (tail != nil || !opts.Since.IsZero()) && !readWhole {
		// Only the lines returned are read: the tail's, or those from
		// since on, found backwards from the end.
		n := opts.TailLines
		if n < 0 {
			n = math.MaxInt64
		}
		if start, err = tailStart(rotated, cur, n, w.wants, opts.Since); err != nil {
			return err
		}
	}
	h := &history{w: w, tail: tail}
	for i := start.file; i < len(rotated); i++ {
		off := int64(0)
		if i == start.file {
			off = start.off
		}
		if err := h.readFile(rotated[i], off); err != nil {
			// A rotated file can be compressed or removed while we read:
			// what it held is lost to this request, not the whole log.
			klog.V(4).InfoS("Skipping a rotated log file", "path", rotated[i], "err", err)
		}
	}
	if cur == nil {
		// Rotated away and not recreated yet: the rotated files are the log.
		return h.finish()
	}
	t := &tracked{File: cur}
	if start.file == len(rotated) && start.off > 0 {
		if _, err := cur.Seek(start.off, io.SeekStart); err != nil {
			return err
		}
		t.pos = start.off
	}
	r := bufio.NewReader(t)
	if err := h.scan(r, false); err != nil {
		return err
	}
	if err := h.finish(); err != nil || !opts.Follow {
		return err
	}
	return follow(ctx, path, t, r, h, alive)
}

// history reads complete log content before a follow starts; with a tail
// it keeps the last lines and writes them at the end.
type history struct {
	w    *writer
	tail *ring
	j    joiner
	// partial holds a physical line read without its newline (still being
	// written); it is completed by the next read.
	partial []byte
}

// readFile reads a rotated file from byte off (0 for a compressed one).
func (h *history) readFile(path string, off int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
	}
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	return h.scan(bufio.NewReader(r), true)
}

// scan reads physical lines until EOF. A last line without a newline is
// taken as a line when complete is true (a rotated file will not grow),
// else kept for the next scan.
func (h *history) scan(r *bufio.Reader, complete bool) error {
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			if len(h.partial) > 0 {
				b = append(h.partial, b...)
				h.partial = nil
			}
			if b[len(b)-1] == '\n' || complete {
				if werr := h.line(b); werr != nil {
					return werr
				}
			} else {
				h.partial = append([]byte(nil), b...)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (h *history) line(b []byte) error {
	m, err := ParseLine(b)
	if err != nil {
		klog.V(4).InfoS("Skipping a malformed log line", "err", err)
		return nil
	}
	if h.tail == nil {
		return h.w.message(m)
	}
	// Partial messages are joined so that the tail counts whole lines.
	if l, ok := h.j.add(m); ok && h.w.wants(l.Stream, l.Time) {
		h.tail.push(l)
	}
	return nil
}

// finish writes the kept tail. A line the log ends within (incomplete:
// the log ended there, or a follower continues it) counts as a line of
// the tail by its last part, and is written after the complete ones; an
// incomplete line left out makes a follower leave out its rest too.
func (h *history) finish() error {
	if h.tail == nil {
		return nil
	}
	h.w.init()
	lines := h.tail.lines()
	incomplete := h.j.flush()
	// Which lines are the last TailLines by their last part: the complete
	// ones are in order, at most two incomplete ones join them.
	keep := map[int64]bool{}
	var order []int64
	for _, l := range lines {
		order = append(order, l.seq)
	}
	for _, l := range incomplete {
		if h.w.wants(l.Stream, l.Time) {
			order = append(order, l.seq)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	if int64(len(order)) > h.tail.max {
		order = order[int64(len(order))-h.tail.max:]
	}
	for _, s := range order {
		keep[s] = true
	}
	for _, l := range lines {
		if !keep[l.seq] {
			continue
		}
		if err := h.w.line(l); err != nil {
			return err
		}
	}
	for _, l := range incomplete {
		if !keep[l.seq] || !h.w.wants(l.Stream, l.Time) {
			h.w.skip[l.Stream] = true
			h.w.mid[l.Stream] = true
			continue
		}
		if err := h.w.line(l); err != nil {
			return err
		}
	}
	h.tail = nil
	return nil
}

// follow streams what is appended to the file at path, reopening it when
// it is rotated (renamed and recreated) or truncated.
func follow(ctx context.Context, path string, cur *tracked, r *bufio.Reader, h *history, alive func() bool) error {
	// The file follow ends on may be one it opened after a rotation.
	defer func() { cur.Close() }()
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the log: %w", err)
	}
	defer watcher.Close()
	if err := watcher.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("watching the log directory: %w", err)
	}
	timer := time.NewTimer(followPoll)
	defer timer.Stop()
	for {
		if err := h.scan(r, false); err != nil {
			return err
		}
		// At EOF: has the file been replaced or truncated?
		switch st := fileState(cur, path); st {
		case replaced:
			// Drain what the old file got before it was renamed, then go
			// on with the new one.
			if err := h.scan(r, true); err != nil {
				return err
			}
			next, err := os.Open(path)
			if err == nil {
				cur.Close()
				cur = &tracked{File: next}
				r.Reset(cur)
				continue
			}
			if !os.IsNotExist(err) {
				return err
			}
			// Not recreated yet: wait below.
		case truncated:
			if err := cur.rewind(); err != nil {
				return err
			}
			r.Reset(cur)
			h.partial = nil
			continue
		}
		if alive != nil && !alive() {
			// The container stopped: whatever it wrote is in the file now.
			return h.scan(r, true)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(followPoll)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case err, ok := <-watcher.Errors:
			if ok {
				klog.V(4).InfoS("Log watch error; polling", "path", path, "err", err)
			}
		case <-watcher.Events:
		}
		if cur.rewritten() {
			if err := cur.rewind(); err != nil {
				return err
			}
			r.Reset(cur)
			h.partial = nil
		}
	}
}

// tracked reads a log file and remembers the last byte it returned and
// where: a file truncated in place and written again past that point
// (copytruncate racing the writer), before or while the follower looks, no
// longer holds that byte there. The byte is the one read, not one looked up
// later, so a rewrite between the read and the look is seen too.
type tracked struct {
	*os.File
	pos  int64 // bytes read since the file was opened or rewound
	last byte
}

func (t *tracked) Read(p []byte) (int, error) {
	n, err := t.File.Read(p)
	if n > 0 {
		t.pos += int64(n)
		t.last = p[n-1]
	}
	return n, err
}

// rewind reads the file from its start again.
func (t *tracked) rewind() error {
	if _, err := t.File.Seek(0, io.SeekStart); err != nil {
		return err
	}
	t.pos, t.last = 0, 0
	return nil
}

// rewritten reports whether the byte read last is no longer where it was
// read: the file was cut shorter, or cut and written again.
func (t *tracked) rewritten() bool {
	if t.pos == 0 {
		return false
	}
	var b [1]byte
	if _, err := t.File.ReadAt(b[:], t.pos-1); err != nil {
		return true
	}
	return b[0] != t.last
}

type fileChange int

const (
	same fileChange = iota
	replaced
	truncated // in place, possibly written again: read it from the start
)

// fileState tells whether the log at path is still the file being read,
// and whether that file still holds what was read of it.
func fileState(cur *tracked, path string) fileChange {
	st, err := os.Stat(path)
	if err != nil {
		return replaced
	}
	open, err := cur.Stat()
	if err != nil {
		return same
	}
	if !os.SameFile(st, open) {
		return replaced
	}
	if cur.rewritten() {
		return truncated
	}
	return same
}

// ring keeps the last max lines, in O(max) memory and O(1) per line.
type ring struct {
	max  int64
	buf  []Line
	next int // where the next line goes once buf is full
}

func newRing(max int64) *ring { return &ring{max: max} }

func (r *ring) push(l Line) {
	if r.max == 0 {
		return
	}
	if int64(len(r.buf)) < r.max {
		r.buf = append(r.buf, l)
		return
	}
	r.buf[r.next] = l
	r.next = (r.next + 1) % len(r.buf)
}

// lines returns the kept lines, oldest first.
func (r *ring) lines() []Line {
	return append(r.buf[r.next:len(r.buf):len(r.buf)], r.buf[:r.next]...)
}

// writer writes messages by stream with the options' timestamp prefix,
// since filter and byte limit.
type writer struct {
	out       map[Stream]io.Writer
	opts      Options
	remaining int64
	// mid is true for a stream whose current logical line has started;
	// skip is true when that line is left out (too old).
	mid  map[Stream]bool
	skip map[Stream]bool
}

// wants reports whether a line of stream s starting at t is returned.
func (w *writer) wants(s Stream, t time.Time) bool {
	if w.out[s] == nil {
		return false
	}
	return w.opts.Since.IsZero() || !t.Before(w.opts.Since)
}

func (w *writer) init() {
	if w.mid == nil {
		w.mid = map[Stream]bool{}
		w.skip = map[Stream]bool{}
	}
}

// message writes one CRI message, continuing a logical line when the
// stream's previous message was partial. The message goes out in ONE
// write (timestamp, content and newline together): the server flushes
// every write, and the API server turns every read of a log stream into
// one websocket message, so a newline written on its own would reach a
// websocket client as a message of its own (which clients such as the
// conformance suite drop as blank).
func (w *writer) message(m Message) error {
	w.init()
	var b []byte
	if !w.mid[m.Stream] {
		w.skip[m.Stream] = !w.wants(m.Stream, m.Time)
		if !w.skip[m.Stream] && w.opts.Timestamps {
			b = append(m.Time.AppendFormat(b, time.RFC3339Nano), ' ')
		}
	}
	w.mid[m.Stream] = m.Partial
	if w.skip[m.Stream] {
		return nil
	}
	b = append(b, m.Content...)
	if !m.Partial {
		b = append(b, '\n')
	}
	return w.write(m.Stream, b)
}

// line writes a whole (joined) line; one without a final newline leaves
// the stream mid-line.
func (w *writer) line(l Line) error {
	w.init()
	prefix := []byte(nil)
	if w.opts.Timestamps {
		prefix = []byte(l.Time.Format(time.RFC3339Nano) + " ")
	}
	w.mid[l.Stream] = len(l.Content) == 0 || l.Content[len(l.Content)-1] != '\n'
	w.skip[l.Stream] = false
	return w.write(l.Stream, append(prefix, l.Content...))
}

func (w *writer) write(s Stream, b []byte) error {
	out := w.out[s]
	if out == nil || len(b) == 0 {
		return nil
	}
	if w.opts.LimitBytes > 0 {
		if w.remaining <= 0 {
			return errLimit
		}
		if int64(len(b)) > w.remaining {
			b = b[:w.remaining]
		}
		w.remaining -= int64(len(b))
	}
	if _, err := out.Write(b); err != nil {
		return err
	}
	if w.opts.LimitBytes > 0 && w.remaining <= 0 {
		return errLimit
	}
	return nil
}
