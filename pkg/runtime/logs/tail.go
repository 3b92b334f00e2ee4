package logs

import (
	"bytes"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Reading only what is returned.
//
// A tail is found by reading the files backwards from the end of the
// newest one (older rotated files only when it needs more lines), which
// yields the position the forward reader starts from: the cost is the
// lines returned, not the size of the log. The forward reader then does
// the joining, filtering and writing exactly as for a whole log, so the
// two paths cannot disagree on what a line is.
//
// cri-client's logs package (k8s.io/cri-client v0.34) reads a tail the same
// way, but only in the current file, counting physical lines (a line split
// in partial messages counts several times) and with its position finder
// unexported, so it does not serve this reader: rotated files and joined
// lines are part of this kubelet's contract (README, docs/kubelet-api.md).

// position is where the forward reader starts: a byte offset in one of
// the log's files, oldest first.
type position struct {
	file int
	off  int64
}

// backBlock is how much a backward reader reads at a time.
const backBlock = 64 << 10

// backLines yields the lines of r[0:end) from the last to the first,
// each with its offset. A line is valid until the next call.
type backLines struct {
	r     io.ReaderAt
	start int64  // offset of buf[0]
	buf   []byte // bytes [start, start+len(buf)) not yet yielded
	chunk []byte
}

func newBackLines(r io.ReaderAt, end int64) *backLines {
	return &backLines{r: r, start: end, chunk: make([]byte, 0, backBlock)}
}

// next returns the previous line (with its newline, if it has one) and
// its offset; ok is false at the beginning of the data.
func (b *backLines) next() (line []byte, off int64, ok bool, err error) {
	for {
		if n := len(b.buf); n > 0 {
			// The line ends at the end of buf; it starts after the
			// previous newline, if buf holds one.
			if i := bytes.LastIndexByte(b.buf[:n-1], '\n'); i >= 0 {
				line, off = b.buf[i+1:], b.start+int64(i+1)
				b.buf = b.buf[:i+1]
				return line, off, true, nil
			}
			if b.start == 0 {
				line, off = b.buf, 0
				b.buf = nil
				return line, off, true, nil
			}
		} else if b.start == 0 {
			return nil, 0, false, nil
		}
		// Read the block before buf, keeping buf (the unfinished line)
		// after it in the same chunk.
		n := int64(backBlock)
		if b.start < n {
			n = b.start
		}
		need := int(n) + len(b.buf)
		if cap(b.chunk) < need {
			grown := make([]byte, need, 2*need)
			copy(grown[n:], b.buf)
			b.chunk = grown
		} else {
			b.chunk = b.chunk[:need]
			copy(b.chunk[n:], b.buf)
		}
		if _, err := b.r.ReadAt(b.chunk[:n], b.start-n); err != nil && err != io.EOF {
			return nil, 0, false, err
		}
		b.start -= n
		b.buf = b.chunk
	}
}

// tailFinder decides, reading messages from the last to the first, where
// a forward read has to start to see the last n wanted lines whole.
//
// A logical line ends with an F message and starts after the previous F
// of its stream. Going backwards, each stream has at most one open line:
// the one its last F seen (or a trailing run of P messages, an incomplete
// line) began, whose start is not reached yet; it closes at the stream's
// previous F or at the beginning of the log, and only then is its first
// part (which the since filter looks at) known. Lines are ranked by their
// F's position (0 = the last). The last n wanted lines are known once n
// closed wanted lines rank before every open line. Lines that end before
// the start found but began earlier reach the forward reader cut; they
// rank after those n lines, so its tail of n drops them.
type tailFinder struct {
	n     int64
	wants func(Stream, time.Time) bool
	since time.Time

	rank    int
	open    [2]*openLine // by streamIndex
	counted int64
	// waiting holds the ranks of closed wanted lines that rank after
	// an open line, so they may not be among the last n yet.
	waiting []int
}

type openLine struct {
	rank     int
	complete bool // ends with F; false for the trailing partial line
	first    time.Time
}

func streamIndex(s Stream) int {
	if s == Stderr {
		return 1
	}
	return 0
}

// minOpen is the rank of the newest open line, or -1 when none is open.
func (f *tailFinder) minOpen() int {
	m := -1
	for _, o := range f.open {
		if o != nil && (m < 0 || o.rank < m) {
			m = o.rank
		}
	}
	return m
}

func (f *tailFinder) close(s Stream) {
	o := f.open[streamIndex(s)]
	f.open[streamIndex(s)] = nil
	if o == nil || !f.wants(s, o.first) {
		return
	}
	f.waiting = append(f.waiting, o.rank)
}

// settle counts the waiting lines no open line ranks before.
func (f *tailFinder) settle() {
	m := f.minOpen()
	kept := f.waiting[:0]
	for _, r := range f.waiting {
		if m < 0 || r < m {
			f.counted++
		} else {
			kept = append(kept, r)
		}
	}
	f.waiting = kept
}

// add takes the message before all those seen so far; it reports whether
// the forward read may start at this message (at) or just after it
// (after).
func (f *tailFinder) add(m Message) (at, after bool) {
	i := streamIndex(m.Stream)
	if !f.since.IsZero() && m.Time.Before(f.since) && !m.Partial {
		// Runtimes write in time order, so every line before this one
		// started before since too. This F ends the open line of its
		// stream there; the other stream's open line, if any, started
		// before since when a part of it seen already did.
		other := f.open[1-i]
		if other == nil || other.first.Before(f.since) {
			return false, true
		}
	}
	if m.Partial {
		if o := f.open[i]; o != nil {
			o.first = m.Time
		} else {
			f.open[i] = &openLine{rank: f.rank, first: m.Time}
			f.rank++
		}
		return false, false
	}
	f.close(m.Stream)
	f.open[i] = &openLine{rank: f.rank, complete: true, first: m.Time}
	f.rank++
	f.settle()
	return f.counted >= f.n, false
}

// tailStart returns where a forward read of the rotated files (oldest
// first) and then the current file cur (nil when there is none) starts to
// return the last n wanted lines; position.file len(rotated) is cur. The
// current file's unterminated last line is still being written and does
// not count. It reads backwards from the end until it knows; a compressed
// file cannot be read backwards, so reaching one means reading from the
// beginning (its lines are older than those of the current and the newest
// rotated file, which stays uncompressed).
func tailStart(rotated []string, cur *os.File, n int64, wants func(Stream, time.Time) bool, since time.Time) (position, error) {
	f := &tailFinder{n: n, wants: wants, since: since}
	if cur != nil {
		p, found, err := tailStartIn(cur, true, f)
		if err != nil {
			return position{}, err
		}
		if found {
			return position{file: len(rotated), off: p}, nil
		}
	}
	for i := len(rotated) - 1; i >= 0; i-- {
		if strings.HasSuffix(rotated[i], ".gz") {
			klog.V(4).InfoS("Log tail reaches a compressed file; reading from the first file", "path", rotated[i])
			return position{}, nil
		}
		file, err := os.Open(rotated[i])
		if err != nil {
			if os.IsNotExist(err) {
				// Compressed or removed meanwhile: the forward read copes.
				continue
			}
			return position{}, err
		}
		p, found, err := tailStartIn(file, false, f)
		file.Close()
		if err != nil {
			return position{}, err
		}
		if found {
			return position{file: i, off: p}, nil
		}
	}
	return position{}, nil
}

func tailStartIn(file *os.File, current bool, f *tailFinder) (int64, bool, error) {
	st, err := file.Stat()
	if err != nil {
		return 0, false, err
	}
	end := st.Size()
	br := newBackLines(file, end)
	if current {
		// The current file's last line counts once its newline is
		// written; the forward reader keeps it back until then.
		line, off, ok, err := br.next()
		if err != nil || !ok {
			return 0, false, err
		}
		if line[len(line)-1] != '\n' {
			end = off
		}
		br = newBackLines(file, end)
	}
	for {
		line, off, ok, err := br.next()
		if err != nil || !ok {
			return 0, false, err
		}
		m, err := ParseLine(line)
		if err != nil {
			continue
		}
		at, after := f.add(m)
		if after {
			return off + int64(len(line)), true, nil
		}
		if at {
			return off, true, nil
		}
	}
}
