package logs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchLogSize is the size of the generated log BenchmarkTail reads;
// LOGS_BENCH_MIB overrides it (hack/bench.sh's log step keeps 100).
func benchLogSize() int64 {
	var mib int64 = 100
	if v := os.Getenv("LOGS_BENCH_MIB"); v != "" {
		fmt.Sscan(v, &mib)
	}
	return mib << 20
}

// writeBenchLog writes a CRI log of at least size bytes: lines of about
// 100 bytes, both streams, every 50th line split in two partial messages.
func writeBenchLog(b *testing.B, path string, size int64) int {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	lines := 0
	ts := t0
	for written < size {
		stream := "stdout"
		if lines%7 == 0 {
			stream = "stderr"
		}
		stamp := ts.Format(time.RFC3339Nano)
		var n int
		if lines%50 == 0 {
			n, _ = fmt.Fprintf(w, "%s %s P line %09d first half of a long line, \n%s %s F and its second half\n", stamp, stream, lines, stamp, stream)
		} else {
			n, _ = fmt.Fprintf(w, "%s %s F line %09d the quick brown fox jumps over the lazy dog\n", stamp, stream, lines)
		}
		written += int64(n)
		lines++
		ts = ts.Add(time.Millisecond)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return lines
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingWriter counts the lines it is given.
type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.n++
		}
	}
	return len(p), nil
}

// BenchmarkTail reads the last 10 and 10,000 lines of a generated 100 MiB
// log (kubectl logs --tail). It reports the process CPU time per read
// (cpu-ms/op) besides the allocated bytes; the acceptance is under 50 ms
// for 10 lines and under 0.5 s for 10,000.
func BenchmarkTail(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "0.log")
	writeBenchLog(b, path, benchLogSize())
	for _, n := range []int64{10, 10000} {
		b.Run(fmt.Sprintf("tail=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for i := 0; i < b.N; i++ {
				var out countingWriter
				if err := Read(context.Background(), path, Options{TailLines: n}, &out, &out, nil); err != nil {
					b.Fatal(err)
				}
				if int64(out.n) != n {
					b.Fatalf("got %d lines, want %d", out.n, n)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
