package cgroups

import (
	"reflect"
	"testing"
)

func TestParsePSI(t *testing.T) {
	full := func(d PSIData) *PSIData { return &d }
	for _, tc := range []struct {
		name    string
		in      string
		want    PSI
		wantErr bool
	}{
		{name: "some and full",
			in:   "some avg10=1.50 avg60=0.25 avg300=0.07 total=6453768958\nfull avg10=0.66 avg60=2.71 avg300=2.05 total=220187388\n",
			want: PSI{Some: PSIData{Total: 6453768958, Avg10: 1.5, Avg60: 0.25, Avg300: 0.07}, Full: full(PSIData{Total: 220187388, Avg10: 0.66, Avg60: 2.71, Avg300: 2.05})}},
		// Two decimals as the kernel prints them, taken as written (no
		// rounding to whole percents), up to 100.00; a total up to the
		// largest uint64.
		{name: "precision and range",
			in:   "some avg10=100.00 avg60=99.99 avg300=0.01 total=18446744073709551615\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0",
			want: PSI{Some: PSIData{Total: 18446744073709551615, Avg10: 100, Avg60: 99.99, Avg300: 0.01}, Full: full(PSIData{})}},
		// cpu.pressure before Linux 5.13: no full line, and no zeros made up.
		{name: "no full line",
			in:   "some avg10=0.00 avg60=0.12 avg300=0.30 total=42\n",
			want: PSI{Some: PSIData{Total: 42, Avg60: 0.12, Avg300: 0.3}}},
		{name: "order, spacing, unknown keys and lines",
			in:   "full  total=9 avg300=0.03 avg60=0.02 avg10=0.01\nnew kind=1\n\nsome avg10=0.10 avg60=0.20 avg300=0.30 total=7 extra=x\n",
			want: PSI{Some: PSIData{Total: 7, Avg10: 0.1, Avg60: 0.2, Avg300: 0.3}, Full: full(PSIData{Total: 9, Avg10: 0.01, Avg60: 0.02, Avg300: 0.03})}},
		{name: "empty", in: "", wantErr: true},
		{name: "full only", in: "full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "not key=value", in: "some avg10 0.00 avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "bad average", in: "some avg10=x avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "negative average", in: "some avg10=-1.00 avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "average over 100", in: "some avg10=100.01 avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "NaN average", in: "some avg10=NaN avg60=0.00 avg300=0.00 total=1\n", wantErr: true},
		{name: "negative total", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", wantErr: true},
		{name: "fractional total", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1.5\n", wantErr: true},
		{name: "total missing", in: "some avg10=0.00 avg60=0.00 avg300=0.00\n", wantErr: true},
		{name: "cut short", in: "some avg10=0.00\n", wantErr: true},
		// A malformed full line spoils the file, though some is fine.
		{name: "bad full line", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.00 total=x\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePSI(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v (full %+v), want %+v (full %+v)", got, got.Full, tc.want, tc.want.Full)
			}
		})
	}
}

// TestReadPSI checks where each kind of host's pressure files are read.
func TestReadPSI(t *testing.T) {
	const (
		cpuP = "some avg10=1.00 avg60=2.00 avg300=3.00 total=100\nfull avg10=0.50 avg60=1.00 avg300=1.50 total=50\n"
		memP = "some avg10=0.00 avg60=0.00 avg300=0.00 total=200\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=150\n"
		ioP  = "some avg10=0.00 avg60=0.00 avg300=0.00 total=300\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=250\n"
		sysP = "some avg10=9.00 avg60=9.00 avg300=9.00 total=900\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	)
	hyb, _ := ParseMountInfo(hybrid)
	pureV1 := Hierarchy{Version: 1, V1: hyb.V1}
	v2 := Hierarchy{Version: 2, Unified: "/sys/fs/cgroup"}
	pod := "/kubepods/burstable/podx"
	totals := func(p Pressure) [3]uint64 {
		var out [3]uint64
		for i, x := range []*PSI{p.CPU, p.Memory, p.IO} {
			if x != nil {
				out[i] = x.Some.Total
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		h     Hierarchy
		files map[string]string
		cg    string
		// want is the Some totals of cpu, memory and io; 0 for none.
		want [3]uint64
	}{
		{name: "hybrid: the same path under the cgroup2 mount", h: hyb, cg: pod,
			files: map[string]string{"sys/fs/cgroup/unified" + pod + "/cpu.pressure": cpuP, "sys/fs/cgroup/unified" + pod + "/memory.pressure": memP, "sys/fs/cgroup/unified" + pod + "/io.pressure": ioP,
				// The v1 hierarchies have no pressure files to read.
				"sys/fs/cgroup/cpu" + pod + "/cpu.pressure": sysP},
			want: [3]uint64{100, 200, 300}},
		{name: "hybrid: a cgroup absent from the cgroup2 mount has none", h: hyb, cg: pod,
			files: map[string]string{"sys/fs/cgroup/memory" + pod + "/memory.pressure": memP, "proc/pressure/cpu": sysP}},
		{name: "hybrid: one file missing, one malformed", h: hyb, cg: pod,
			files: map[string]string{"sys/fs/cgroup/unified" + pod + "/cpu.pressure": cpuP, "sys/fs/cgroup/unified" + pod + "/io.pressure": "some avg10=0.00 total=3\n"},
			want:  [3]uint64{100, 0, 0}},
		{name: "hybrid root: its own files first", h: hyb, cg: "/",
			files: map[string]string{"sys/fs/cgroup/unified/cpu.pressure": cpuP, "proc/pressure/cpu": sysP, "proc/pressure/memory": sysP},
			want:  [3]uint64{100, 900, 0}},
		{name: "v1 without cgroup2: the root from /proc/pressure", h: pureV1, cg: "/",
			files: map[string]string{"proc/pressure/cpu": sysP, "proc/pressure/memory": sysP, "proc/pressure/io": sysP},
			want:  [3]uint64{900, 900, 900}},
		{name: "v1 without cgroup2: no PSI for other cgroups", h: pureV1, cg: pod,
			files: map[string]string{"proc/pressure/cpu": sysP, "sys/fs/cgroup/unified" + pod + "/cpu.pressure": cpuP}},
		{name: "v2: the cgroup's own directory", h: v2, cg: "/kubepods.slice",
			files: map[string]string{"sys/fs/cgroup/kubepods.slice/cpu.pressure": cpuP, "sys/fs/cgroup/kubepods.slice/io.pressure": ioP, "proc/pressure/memory": sysP},
			want:  [3]uint64{100, 0, 300}},
		{name: "v2 root without pressure files", h: v2, cg: "/",
			files: map[string]string{"proc/pressure/cpu": sysP},
			want:  [3]uint64{900, 0, 0}},
		{name: "no PSI at all (psi=0)", h: v2, cg: "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, content := range tc.files {
				write(t, root, rel, content)
			}
			got := NewReaderAt(tc.h, root).ReadPSI(tc.cg)
			if totals(got) != tc.want {
				t.Errorf("some totals = %v, want %v", totals(got), tc.want)
			}
		})
	}
}

// TestReadCarriesPSI: Read fills PSI alongside the usage it reads.
func TestReadCarriesPSI(t *testing.T) {
	root := t.TempDir()
	h, _ := ParseMountInfo(hybrid)
	cg := "/kubepods"
	write(t, root, "sys/fs/cgroup/cpuacct"+cg+"/cpuacct.usage", "1\n")
	write(t, root, "sys/fs/cgroup/unified"+cg+"/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=4\n")
	st, err := NewReaderAt(h, root).Read(cg)
	if err != nil {
		t.Fatal(err)
	}
	if st.PSI.Memory == nil || st.PSI.Memory.Full == nil || st.PSI.Memory.Full.Total != 4 || st.PSI.CPU != nil || st.PSI.IO != nil {
		t.Errorf("PSI = %+v", st.PSI)
	}
}
