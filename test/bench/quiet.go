package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Before each measured workload the machine is let go quiet: work the
// previous one left behind (shims exiting, network namespaces the kernel
// tears down after the runtime returned, the runtime's garbage collection)
// would otherwise be charged to whoever comes next. Two builds of our
// kubelet side by side showed the first slot of a round ~1.28x slower at
// 100 pods, whichever build ran there.

// quietIdle is the share of CPU time that must be idle over one window.
const quietIdle = 0.75

// cpuTimes are the aggregate jiffies of /proc/stat's "cpu" line.
type cpuTimes struct{ idle, total uint64 }

// parseCPUTimes reads the "cpu" line of /proc/stat: idle is idle+iowait.
func parseCPUTimes(stat string) (cpuTimes, error) {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			continue
		}
		var t cpuTimes
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat cpu field %d: %w", i+1, err)
			}
			// user nice system idle iowait irq softirq steal guest guest_nice:
			// guest time is already counted in user and nice.
			if i >= 8 {
				break
			}
			t.total += v
			if i == 3 || i == 4 {
				t.idle += v
			}
		}
		return t, nil
	}
	return cpuTimes{}, fmt.Errorf("no cpu line in /proc/stat")
}

// idleShare is the share of CPU time idle between two readings (1 when
// no time passed).
func idleShare(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 1
	}
	return float64(b.idle-a.idle) / float64(b.total-a.total)
}

func readCPUTimes() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPUTimes(string(data))
}

// waitQuiet waits until one window of CPU time is at least quietIdle idle,
// for at most limit, and logs what it waited for.
func waitQuiet(ctx context.Context, what string, window, limit time.Duration) {
	start := time.Now()
	last := 0.0
	for time.Since(start) < limit {
		a, err := readCPUTimes()
		if err != nil {
			logf("quiet before %s: %v", what, err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(window):
		}
		b, err := readCPUTimes()
		if err != nil {
			logf("quiet before %s: %v", what, err)
			return
		}
		if last = idleShare(a, b); last >= quietIdle {
			logf("quiet before %s after %.1fs (%.0f%% idle)", what, time.Since(start).Seconds(), 100*last)
			return
		}
	}
	logf("quiet before %s: still busy after %.0fs (%.0f%% idle), going on", what, limit.Seconds(), 100*last)
}
