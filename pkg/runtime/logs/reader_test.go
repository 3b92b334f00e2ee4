package logs

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func at(sec int) string { return t0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano) }

func cri(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", at(sec), stream, tag, content)
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Message
		wantErr bool
	}{
		{in: "2016-10-06T00:17:09.669794202Z stdout F hello world\n", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC), Stream: Stdout, Content: []byte("hello world")}},
		{in: "2016-10-06T00:17:09.669794202Z stderr P part", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC), Stream: Stderr, Partial: true, Content: []byte("part")}},
		{in: "2016-10-06T00:17:09Z stdout F \n", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 0, time.UTC), Stream: Stdout, Content: []byte("")}},
		{in: "2016-10-06T00:17:09Z stdout F\n", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 0, time.UTC), Stream: Stdout, Content: nil}},
		{in: "2016-10-06T00:17:09Z stdout F:x  two  spaces ", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 0, time.UTC), Stream: Stdout, Content: []byte(" two  spaces ")}},
		{in: "2016-10-06T00:17:09+02:00 stdout P a b", want: Message{Time: time.Date(2016, 10, 6, 0, 17, 9, 0, time.FixedZone("", 7200)), Stream: Stdout, Partial: true, Content: []byte("a b")}},
		{in: "not-a-time stdout F x", wantErr: true},
		{in: "2016-10-06T00:17:09Z stdin F x", wantErr: true},
		{in: "2016-10-06T00:17:09Z stdout X x", wantErr: true},
		{in: "2016-10-06T00:17:09Z", wantErr: true},
		{in: "2016-10-06T00:17:09Z stdout", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParseLine([]byte(tc.in))
		if tc.wantErr {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !got.Time.Equal(tc.want.Time) || got.Stream != tc.want.Stream || got.Partial != tc.want.Partial || !bytes.Equal(got.Content, tc.want.Content) {
			t.Errorf("%q: got %+v want %+v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stdout F hello\n"))
	f.Add([]byte("2016-10-06T00:17:09Z stderr P \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseLine(b)
		if err != nil {
			return
		}
		if m.Stream != Stdout && m.Stream != Stderr {
			t.Fatalf("stream %q accepted", m.Stream)
		}
		if len(m.Content) > len(b) {
			t.Fatalf("content longer than input")
		}
	})
}

// logFile writes lines into dir/0.log (and returns its path).
func logFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, path string, opts Options) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if err := Read(context.Background(), path, opts, &out, &errb, nil); err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String()
}

func TestReadOptions(t *testing.T) {
	dir := t.TempDir()
	// A rotated, compressed file; a rotated plain one; the current file.
	// A partial line crosses the rotation boundary.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(cri(1, "stdout", "F", "one") + cri(2, "stderr", "F", "err-two")))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "0.log.20250301-100001.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile(t, dir, "0.log.20250301-100003", cri(3, "stdout", "F", "three"), cri(4, "stdout", "P", "fo"))
	logFile(t, dir, "0.log.20250301-100009.tmp", cri(9, "stdout", "F", "temporary file of a rotation: ignored"))
	path := logFile(t, dir, "0.log",
		cri(5, "stdout", "F", "ur"),
		"garbage line\n",
		cri(6, "stderr", "P", "err-"),
		cri(7, "stdout", "F", "seven"),
		cri(8, "stderr", "F", "eight"),
	)
	all := Options{TailLines: -1}
	for _, tc := range []struct {
		name         string
		opts         Options
		stdout       string
		stderr       string
		combined     string
		combinedOnly bool
	}{
		{name: "everything", opts: all, stdout: "one\nthree\nfour\nseven\n", stderr: "err-two\nerr-eight\n"},
		{name: "tail 2", opts: Options{TailLines: 2}, combined: "seven\nerr-eight\n", combinedOnly: true},
		{name: "tail 3 crosses the joined line", opts: Options{TailLines: 3}, combined: "four\nseven\nerr-eight\n", combinedOnly: true},
		{name: "tail 0", opts: Options{TailLines: 0}, stdout: "", stderr: ""},
		{name: "tail beyond the log", opts: Options{TailLines: 100}, stdout: "one\nthree\nfour\nseven\n", stderr: "err-two\nerr-eight\n"},
		{name: "since drops older lines; a joined line counts from its first part", opts: Options{TailLines: -1, Since: t0.Add(4 * time.Second)}, stdout: "four\nseven\n", stderr: "err-eight\n"},
		{name: "since between parts drops the whole line", opts: Options{TailLines: -1, Since: t0.Add(5 * time.Second)}, stdout: "seven\n", stderr: "err-eight\n"},
		{name: "timestamps", opts: Options{TailLines: 2, Timestamps: true}, combined: at(7) + " seven\n" + at(6) + " err-eight\n", combinedOnly: true},
		{name: "timestamps without tail", opts: Options{TailLines: -1, Timestamps: true, Since: t0.Add(4 * time.Second)}, stdout: at(4) + " four\n" + at(7) + " seven\n", stderr: at(6) + " err-eight\n"},
		{name: "limit bytes cuts mid-line", opts: Options{TailLines: -1, LimitBytes: 6}, stdout: "one\n", stderr: "er"},
		{name: "limit bytes with tail", opts: Options{TailLines: 1, LimitBytes: 3}, stderr: "err"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.combinedOnly {
				var b bytes.Buffer
				if err := Read(context.Background(), path, tc.opts, &b, &b, nil); err != nil {
					t.Fatal(err)
				}
				if b.String() != tc.combined {
					t.Errorf("got %q want %q", b.String(), tc.combined)
				}
				return
			}
			out, errs := readAll(t, path, tc.opts)
			if out != tc.stdout || errs != tc.stderr {
				t.Errorf("stdout %q stderr %q; want %q and %q", out, errs, tc.stdout, tc.stderr)
			}
		})
	}
	// One stream only: the other is left out, also from the tail count.
	var b bytes.Buffer
	if err := Read(context.Background(), path, Options{TailLines: 2}, nil, &b, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != "err-two\nerr-eight\n" {
		t.Errorf("stderr only, tail 2: %q", b.String())
	}
}

func TestReadIncompleteLastLine(t *testing.T) {
	dir := t.TempDir()
	// The log ends within a partial line, and with a physical line still
	// being written (no newline yet): the first is shown, the second not.
	path := logFile(t, dir, "0.log", cri(1, "stdout", "F", "a"), cri(2, "stdout", "P", "b"), at(3)+" stdout F half-writ")
	out, _ := readAll(t, path, Options{TailLines: -1})
	if out != "a\nb" {
		t.Errorf("got %q", out)
	}
	out, _ = readAll(t, path, Options{TailLines: 5})
	if out != "a\nb" {
		t.Errorf("tail: got %q", out)
	}
}

func TestNewOptions(t *testing.T) {
	now := t0.Add(time.Hour)
	o := NewOptions(&v1.PodLogOptions{Follow: true, Timestamps: true, TailLines: ptr.To[int64](5), SinceSeconds: ptr.To[int64](60), LimitBytes: ptr.To[int64](10)}, now)
	if !o.Follow || !o.Timestamps || o.TailLines != 5 || !o.Since.Equal(now.Add(-time.Minute)) || o.LimitBytes != 10 {
		t.Errorf("%+v", o)
	}
	st := metav1.NewTime(t0)
	o = NewOptions(&v1.PodLogOptions{SinceTime: &st}, now)
	if o.TailLines != -1 || !o.Since.Equal(t0) || o.Follow {
		t.Errorf("%+v", o)
	}
}

// syncBuf is a buffer a follower writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func appendTo(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte(strings.Join(lines, ""))); err != nil {
		t.Fatal(err)
	}
}

func TestFollowAcrossRotationUntilTheContainerStops(t *testing.T) {
	dir := t.TempDir()
	path := logFile(t, dir, "0.log", cri(1, "stdout", "F", "old-1"), cri(2, "stdout", "F", "old-2"))
	var running atomic.Bool
	running.Store(true)
	out := &syncBuf{}
	done := make(chan error, 1)
	go func() {
		done <- Read(context.Background(), path, Options{Follow: true, TailLines: 1}, out, out, running.Load)
	}()
	eventually.True(t, "the tail", func() bool { return out.String() == "old-2\n" })

	// A line written in two writes, the first without its newline.
	appendTo(t, path, at(3)+" stdout P par")
	appendTo(t, path, "t-\n", cri(3, "stdout", "F", "one"))
	eventually.True(t, "appended lines", func() bool { return out.String() == "old-2\npart-one\n" })

	// Rotation as upstream does it: rename, then the runtime reopens a new
	// file at the same path. Lines written to the old file just before
	// the rename are not lost.
	appendTo(t, path, cri(4, "stdout", "F", "before-rename"))
	if err := os.Rename(path, path+".20250301-100004"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, cri(5, "stdout", "F", "new-file"))
	eventually.True(t, "lines across the rotation", func() bool {
		return out.String() == "old-2\npart-one\nbefore-rename\nnew-file\n"
	})

	// Truncation in place (copytruncate) starts over from the beginning.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, cri(6, "stderr", "F", "after-truncate"))
	eventually.True(t, "lines after truncation", func() bool {
		return strings.HasSuffix(out.String(), "new-file\nafter-truncate\n")
	})

	// The container stops: the follower writes what is left and returns.
	appendTo(t, path, cri(7, "stdout", "F", "last words"))
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follower did not return after the container stopped")
	}
	if !strings.HasSuffix(out.String(), "after-truncate\nlast words\n") {
		t.Errorf("got %q", out.String())
	}
}

func TestFollowEndsWithTheContext(t *testing.T) {
	dir := t.TempDir()
	path := logFile(t, dir, "0.log", cri(1, "stdout", "F", "x"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &syncBuf{}
	go func() {
		done <- Read(ctx, path, Options{Follow: true, TailLines: -1}, out, out, func() bool { return true })
	}()
	eventually.True(t, "the log", func() bool { return out.String() == "x\n" })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follower ignored the cancelled context")
	}
}

func TestFollowStopsAtTheByteLimit(t *testing.T) {
	dir := t.TempDir()
	path := logFile(t, dir, "0.log", cri(1, "stdout", "F", "abc"))
	done := make(chan error, 1)
	out := &syncBuf{}
	go func() {
		done <- Read(context.Background(), path, Options{Follow: true, TailLines: -1, LimitBytes: 6}, out, out, func() bool { return true })
	}()
	eventually.True(t, "the log", func() bool { return out.String() == "abc\n" })
	appendTo(t, path, cri(2, "stdout", "F", "defgh"))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follower did not stop at the limit")
	}
	if out.String() != "abc\nde" {
		t.Errorf("got %q", out.String())
	}
}

func TestMissingLog(t *testing.T) {
	err := Read(context.Background(), filepath.Join(t.TempDir(), "0.log"), Options{TailLines: -1}, &bytes.Buffer{}, &bytes.Buffer{}, nil)
	if !os.IsNotExist(err) {
		t.Errorf("want a not-exist error, got %v", err)
	}
}

// writes records every Write on its own.
type writes struct{ got []string }

func (w *writes) Write(p []byte) (int, error) {
	w.got = append(w.got, string(p))
	return len(p), nil
}

// Every CRI message is written in one Write, its timestamp and newline
// included: the API server turns each read of a log stream into one
// websocket message, and a newline on its own would be dropped as blank.
func TestOneWritePerMessage(t *testing.T) {
	dir := t.TempDir()
	path := logFile(t, dir, "0.log",
		cri(1, "stdout", "F", "container is alive"),
		cri(2, "stdout", "P", "part-"),
		cri(3, "stdout", "F", "end"),
		cri(4, "stdout", "F", ""),
	)
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{name: "plain", opts: Options{TailLines: -1}, want: []string{"container is alive\n", "part-", "end\n", "\n"}},
		{name: "timestamps", opts: Options{TailLines: -1, Timestamps: true},
			want: []string{at(1) + " container is alive\n", at(2) + " part-", "end\n", at(4) + " \n"}},
		{name: "byte limit cuts the one write", opts: Options{TailLines: -1, LimitBytes: 9}, want: []string{"container"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writes{}
			if err := Read(context.Background(), path, tc.opts, w, nil, nil); err != nil {
				t.Fatal(err)
			}
			if strings.Join(w.got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("writes %q, want %q", w.got, tc.want)
			}
		})
	}
}

// The follower's check for a file rewritten under it compares the byte it
// read last with what the file holds there now, so a truncation followed by
// a longer write, both before the follower looks, is still seen.
func TestTrackedSeesRewrites(t *testing.T) {
	tests := []struct {
		name    string
		change  func(path string)
		rewrite bool
	}{
		{name: "unchanged", change: func(string) {}},
		{name: "appended", change: func(p string) { appendTo(t, p, "more\n") }},
		{name: "truncated", change: func(p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
		}, rewrite: true},
		{name: "truncated and written past the old end", change: func(p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, p, "a longer first line\n")
		}, rewrite: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			appendTo(t, path, "one\n", "two\n")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr := &tracked{File: f}
			if b, err := io.ReadAll(tr); err != nil || string(b) != "one\ntwo\n" {
				t.Fatalf("read %q, %v", b, err)
			}
			tt.change(path)
			if got := tr.rewritten(); got != tt.rewrite {
				t.Fatalf("rewritten() = %v, want %v", got, tt.rewrite)
			}
			if tt.rewrite {
				if err := tr.rewind(); err != nil {
					t.Fatal(err)
				}
				if tr.rewritten() {
					t.Error("rewritten() after rewind")
				}
			}
		})
	}
}
