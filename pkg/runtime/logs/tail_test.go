package logs

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBackLines(t *testing.T) {
	long := strings.Repeat("x", 3*backBlock+17)
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{name: "empty", in: "", want: nil},
		{name: "one line", in: "a\n", want: []string{"a\n"}},
		{name: "no final newline", in: "a\nb", want: []string{"b", "a\n"}},
		{name: "empty lines", in: "\n\n", want: []string{"\n", "\n"}},
		{name: "a line longer than a block", in: "a\n" + long + "\nb\n", want: []string{"b\n", long + "\n", "a\n"}},
		{name: "a line ending on a block boundary", in: strings.Repeat("y", backBlock-1) + "\n" + "z\n", want: []string{"z\n", strings.Repeat("y", backBlock-1) + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := newBackLines(strings.NewReader(tc.in), int64(len(tc.in)))
			var got []string
			for {
				line, off, ok, err := br.next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				if tc.in[off:off+int64(len(line))] != string(line) {
					t.Fatalf("line %q is not at offset %d", line, off)
				}
				got = append(got, string(line))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q want %q", got, tc.want)
			}
		})
	}
}

// genLog is a log split into files: its rotated files (some compressed)
// and the current one.
type genLog struct {
	files []genFile
}

type genFile struct {
	lines []string
	gz    bool
}

// genFromBytes turns arbitrary bytes into a well-ordered log: time never
// goes backwards (as a runtime writes it), streams, partial and full
// messages, malformed lines and rotations at any point, and a current file
// that may end in a line still being written.
func genFromBytes(data []byte) genLog {
	var g genLog
	cur := genFile{}
	sec := 0
	for i, b := range data {
		switch {
		case b < 8:
			// Rotation, compressed when b is odd.
			cur.gz = b%2 == 1
			g.files = append(g.files, cur)
			cur = genFile{}
			continue
		case b < 12:
			cur.lines = append(cur.lines, "garbage\n")
			continue
		}
		if b&0x10 != 0 {
			sec++
		}
		stream := "stdout"
		if b&0x20 != 0 {
			stream = "stderr"
		}
		tag := "F"
		if b&0x40 != 0 {
			tag = "P"
		}
		cur.lines = append(cur.lines, cri(sec, stream, tag, fmt.Sprintf("m%d", i)))
	}
	if len(data) > 0 && data[len(data)-1]&0x80 != 0 && len(cur.lines) > 0 {
		// Still being written: no newline yet.
		l := cur.lines[len(cur.lines)-1]
		cur.lines[len(cur.lines)-1] = l[:len(l)-1]
	}
	g.files = append(g.files, cur)
	return g
}

// write writes the log into dir and returns the current file's path.
// Rotated files are named after the local time of their last line, as
// the kubelet's rotation names them.
func (g genLog) write(t testing.TB, dir string) string {
	path := filepath.Join(dir, "0.log")
	prevName := ""
	last := t0
	for i, f := range g.files {
		content := strings.Join(f.lines, "")
		for _, l := range f.lines {
			if m, err := ParseLine([]byte(l)); err == nil {
				last = m.Time
			}
		}
		if i == len(g.files)-1 {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			break
		}
		name := path + "." + last.Local().Format("20060102-150405")
		for name <= prevName {
			name += "x"
		}
		prevName = name
		data := []byte(content)
		if f.gz {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(data)
			zw.Close()
			data = b.Bytes()
			name += ".gz"
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// readBoth reads the log with and without skipping, into separate
// stream buffers and into one combined buffer.
func readBoth(t testing.TB, path string, opts Options, streams string) (skipping, whole string) {
	read := func() string {
		var out, errb, comb bytes.Buffer
		var so, se, co, ce = &out, &errb, &comb, &comb
		switch streams {
		case "stdout":
			se, ce = nil, nil
		case "stderr":
			so, co = nil, nil
		}
		if err := readOrNil(path, opts, so, se); err != nil {
			t.Fatal(err)
		}
		if err := readOrNil(path, opts, co, ce); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("stdout %q\nstderr %q\ncombined %q", out.String(), errb.String(), comb.String())
	}
	skipping = read()
	readWhole = true
	defer func() { readWhole = false }()
	whole = read()
	return skipping, whole
}

func readOrNil(path string, opts Options, stdout, stderr *bytes.Buffer) error {
	// A nil *bytes.Buffer must reach Read as a nil io.Writer.
	switch {
	case stdout == nil:
		return Read(context.Background(), path, opts, nil, stderr, nil)
	case stderr == nil:
		return Read(context.Background(), path, opts, stdout, nil, nil)
	}
	return Read(context.Background(), path, opts, stdout, stderr, nil)
}

// checkSkippingRead holds the reader that seeks (tail from the end, since
// past older files) to the one that reads everything.
func checkSkippingRead(t testing.TB, g genLog, tails []int64, sinces []int, limit int64) {
	path := g.write(t, t.TempDir())
	for _, n := range tails {
		for _, since := range sinces {
			for _, streams := range []string{"both", "stdout", "stderr"} {
				opts := Options{TailLines: n, LimitBytes: limit}
				if since >= 0 {
					opts.Since = t0.Add(time.Duration(since) * time.Second)
				}
				got, want := readBoth(t, path, opts, streams)
				if got != want {
					t.Fatalf("tail %d since %d streams %s limit %d:\n%s\nreading everything:\n%s\nlog: %+v", n, since, streams, limit, got, want, g.files)
				}
			}
		}
	}
}

func TestTailAndSinceMatchReadingEverything(t *testing.T) {
	tails := []int64{-1, 0, 1, 2, 3, 5, 8, 13, 1000}
	sinces := []int{-1, 0, 1, 2, 3, 5, 8, 100}
	for _, tc := range []struct {
		name string
		log  genLog
	}{
		{name: "empty", log: genLog{files: []genFile{{}}}},
		{name: "partial line across a rotation", log: genLog{files: []genFile{
			{lines: []string{cri(1, "stdout", "F", "a"), cri(2, "stdout", "P", "b")}},
			{lines: []string{cri(3, "stdout", "F", "c"), cri(4, "stderr", "F", "d")}},
		}}},
		{name: "stderr line open across many stdout lines", log: genLog{files: []genFile{{lines: []string{
			cri(1, "stderr", "P", "e1"), cri(1, "stdout", "F", "o1"), cri(2, "stdout", "F", "o2"),
			cri(3, "stdout", "F", "o3"), cri(4, "stderr", "F", "e2"), cri(5, "stdout", "F", "o4"),
		}}}}},
		{name: "trailing partial lines of both streams", log: genLog{files: []genFile{{lines: []string{
			cri(1, "stdout", "F", "a"), cri(2, "stderr", "F", "b"), cri(3, "stdout", "P", "c"),
			cri(4, "stderr", "P", "d"), cri(5, "stdout", "P", "e"),
		}}}}},
		{name: "compressed older files", log: genLog{files: []genFile{
			{gz: true, lines: []string{cri(1, "stdout", "F", "a"), cri(1, "stderr", "P", "b")}},
			{gz: true, lines: []string{cri(2, "stderr", "F", "c"), cri(3, "stdout", "F", "d")}},
			{lines: []string{cri(4, "stdout", "F", "e")}},
			{lines: []string{cri(5, "stdout", "F", "f"), "garbage\n", cri(6, "stderr", "F", "g")}},
		}}},
		{name: "line still being written", log: genLog{files: []genFile{{lines: []string{
			cri(1, "stdout", "F", "a"), cri(2, "stdout", "P", "b"), strings.TrimSuffix(cri(3, "stdout", "F", "c"), "\n"),
		}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkSkippingRead(t, tc.log, tails, sinces, 0)
			checkSkippingRead(t, tc.log, []int64{-1, 2}, []int{-1, 2}, 5)
		})
	}
	// Generated logs, reproducibly.
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 80; i++ {
		data := make([]byte, rnd.Intn(60))
		rnd.Read(data)
		t.Run(fmt.Sprintf("generated %d", i), func(t *testing.T) {
			checkSkippingRead(t, genFromBytes(data), []int64{-1, 0, 1, 3, 1000}, []int{-1, 0, 3, 100}, 0)
		})
	}
}

// FuzzTail holds tail, since and limit, read by seeking, to the same
// options read from the beginning of every file.
func FuzzTail(f *testing.F) {
	f.Add([]byte{0x10, 0x70, 0x00, 0x30, 0x90}, int64(2), 1, int64(0))
	f.Add([]byte{0x50, 0x60, 0x11, 0x03, 0x30, 0x10, 0x9}, int64(1), -1, int64(0))
	f.Add([]byte{0x12, 0x52, 0x01, 0x22, 0x72, 0x92}, int64(0), 0, int64(3))
	f.Fuzz(func(t *testing.T, data []byte, tail int64, since int, limit int64) {
		if len(data) > 200 {
			return
		}
		if tail < -1 {
			tail = -1
		}
		if limit < 0 {
			limit = 0
		}
		if since < -1 {
			since = -1
		}
		checkSkippingRead(t, genFromBytes(data), []int64{tail}, []int{since}, limit)
	})
}

func TestTailStartsNearTheEnd(t *testing.T) {
	dir := t.TempDir()
	// An older rotated file that is not a log at all: a tail that stays
	// in the newer files never opens it.
	if err := os.WriteFile(filepath.Join(dir, "0.log.20250301-095959"), []byte("not a log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 0; i < 1000; i++ {
		lines = append(lines, cri(i, "stdout", "F", fmt.Sprint(i)))
	}
	path := logFile(t, dir, "0.log", lines...)
	rotated := []string{filepath.Join(dir, "0.log.20250301-095959")}
	cur, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	wants := func(Stream, time.Time) bool { return true }
	p, err := tailStart(rotated, cur, 3, wants, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	wantOff := int64(len(strings.Join(lines[:996], "")))
	if p != (position{file: 1, off: wantOff}) {
		t.Errorf("tail 3 starts at %+v, want file 1 offset %d (the line before the last 3)", p, wantOff)
	}
	// since: the start is right after the last line older than since.
	p, err = tailStart(rotated, cur, 1000, wants, t0.Add(990*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(strings.Join(lines[:990], ""))); p != (position{file: 1, off: want}) {
		t.Errorf("tail 1000 since line 990 starts at %+v, want file 1 offset %d", p, want)
	}
}

// Regression: a tail whose output was empty and whose log ended within a
// line older than since wrote to the writer's unset state and panicked the
// request's goroutine.
func TestTailWithOnlyAnUnwantedIncompleteLineDoesNotPanic(t *testing.T) {
	path := logFile(t, t.TempDir(), "0.log", cri(1, "stdout", "P", "old"))
	out, errs := readAll(t, path, Options{TailLines: 1, Since: t0.Add(5 * time.Second)})
	if out != "" || errs != "" {
		t.Errorf("got %q %q", out, errs)
	}
}
