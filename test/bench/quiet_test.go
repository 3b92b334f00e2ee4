package main

import "testing"

func TestParseCPUTimes(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       cpuTimes
		err        bool
	}{
		{"idle and iowait count as idle; guest is not counted twice",
			"cpu  100 5 50 800 20 1 2 3 40 4\ncpu0 50 2 25 400 10 0 1 1 20 2\n",
			cpuTimes{idle: 820, total: 981}, false},
		{"an older kernel with fewer fields",
			"cpu  10 0 10 80\n", cpuTimes{idle: 80, total: 100}, false},
		{"no aggregate line", "cpu0 1 2 3 4 5\n", cpuTimes{}, true},
		{"garbage", "cpu  1 x 3 4 5\n", cpuTimes{}, true},
	} {
		got, err := parseCPUTimes(c.stat)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestIdleShare(t *testing.T) {
	for _, c := range []struct {
		a, b cpuTimes
		want float64
	}{
		{cpuTimes{100, 200}, cpuTimes{175, 300}, 0.75},
		{cpuTimes{100, 200}, cpuTimes{110, 300}, 0.10},
		{cpuTimes{100, 200}, cpuTimes{100, 200}, 1},
	} {
		if got := idleShare(c.a, c.b); got != c.want {
			t.Errorf("idleShare(%+v, %+v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
