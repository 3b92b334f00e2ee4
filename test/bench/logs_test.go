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
