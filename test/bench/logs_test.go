package main

import (
	"strings"
	"testing"
	"time"
)

func TestLogsSection(t *testing.T) {
	out := `goos: linux
BenchmarkTail/tail=10-2         	      20	    817704 ns/op	         0.1748 cpu-ms/op	  145562 B/op	     122 allocs/op
BenchmarkTail/tail=10000-2      	      20	  54379735 ns/op	        14.69 cpu-ms/op	 7519451 B/op	   70871 allocs/op
PASS
`
	res, err := parseTailBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].name != "tail=10" || res[1].cpuMsOp != 14.69 || res[1].bytesOp != 7519451 || res[0].n != 20 {
		t.Fatalf("parsed %+v", res)
	}
	sec := logsSection(res, "abc", time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	for _, want := range []string{"<!-- logs:begin -->", "| tail=10000 | 20 | 54.38ms | 14.69 ms | 7.2 MiB | 70871 |", "commit abc", "<!-- logs:end -->"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q:\n%s", want, sec)
		}
	}
	if _, err := parseTailBench(strings.NewReader("FAIL\n")); err == nil {
		t.Error("output without results accepted")
	}
}

func TestLiveTailTable(t *testing.T) {
	b := &bench{res: results{}}
	for _, kind := range []string{"ours", "upstream"} {
		b.res.add(kind, "log-tail", "size_mib", 105.9)
	}
	b.res.add("ours", "tail-10", "cpu_ms", 0.4)
	b.res.add("upstream", "tail-10", "cpu_ms", 0.8)
	b.res.add("ours", "tail-10000", "cpu_ms", 12)
	tab := b.liveTailTable()
	for _, want := range []string{"on a 106 MiB log", "| tail=10 (×50) | kubelet CPU / request (ms) | 0.40 | 0.80 | 0.50 |", "| tail=10000 (×10) | kubelet CPU / request (ms) | 12.0 | – | – |"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	// The pod writes the content, then the line the workload waits for.
	cmd := liveTailPod().Spec.Containers[0].Command
	if len(cmd) != 3 || !strings.Contains(cmd[2], "head -c 78643200") || !strings.HasSuffix(cmd[2], "echo "+liveTailDone+"; exec sleep 3600") {
		t.Errorf("logger command %q", cmd)
	}
}
