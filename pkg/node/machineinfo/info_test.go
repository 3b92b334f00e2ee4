package machineinfo

import "testing"

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{"kB", "MemTotal:       16318480 kB\nMemFree:         1048576 kB\n", 16318480 * 1024, false},
		{"not first line", "MemFree: 1 kB\nMemTotal: 2 kB\n", 2048, false},
		{"no unit", "MemTotal: 4096\n", 4096, false},
		{"missing", "MemFree: 1 kB\n", 0, true},
		{"garbage", "MemTotal: lots kB\n", 0, true},
		{"bad unit", "MemTotal: 1 pages\n", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMemTotal(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseMemTotal = %d, %v; want %d, err=%v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"0\n", 1, false},
		{"0-1\n", 2, false},
		{"0-3,6,8-9", 7, false},
		{"", 0, true},
		{"a-b", 0, true},
		{"3-1", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseCPUList(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseCPUList(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseOSRelease(t *testing.T) {
	tests := []struct{ in, want string }{
		{"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n", "Debian GNU/Linux 12 (bookworm)"},
		{"NAME=Alpine\nPRETTY_NAME='Alpine Linux v3.19'\n", "Alpine Linux v3.19"},
		{"PRETTY_NAME=Plain\n", "Plain"},
		{"PRETTY_NAME=\"Say \\\"hi\\\"\"\n", `Say "hi"`},
		{"NAME=NoPretty\n", ""},
	}
	for _, tc := range tests {
		if got := ParseOSRelease(tc.in); got != tc.want {
			t.Errorf("ParseOSRelease(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseDefaultRouteInterface(t *testing.T) {
	const header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	tests := []struct{ name, in, want string }{
		{"single", header +
			"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
			"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", "eth0"},
		{"lowest metric wins", header +
			"wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n" +
			"eth1\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n", "eth1"},
		{"down route ignored", header +
			"eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", ""},
		{"no default", header +
			"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		if got := ParseDefaultRouteInterface(tc.in); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseHugePagesDir(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int64
		bad  bool
	}{
		{"hugepages-2048kB", 2 << 20, false},
		{"hugepages-1048576kB", 1 << 30, false},
		{"hugepages-64kB", 64 << 10, false},
		{"hugepages-2048", 0, true},
		{"hugepages-kB", 0, true},
		{"hugepages-0kB", 0, true},
		{"hugepages--4kB", 0, true},
		{"pages-2048kB", 0, true},
		{"hugepages-99999999999999999999kB", 0, true},
	} {
		got, err := ParseHugePagesDir(tc.name)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseHugePagesDir(%q) = %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseHugePagesCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"0\n", 0, false},
		{" 512\n", 512, false},
		{"-1", 0, true},
		{"", 0, true},
		{"1.5", 0, true},
	} {
		got, err := ParseHugePagesCount(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseHugePagesCount(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
