package cgroups

import (
	"reflect"
	"testing"
)

func TestParseBlkioV1(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []DeviceStats
	}{
		{"empty", "", nil},
		{"no device (no I/O, or throttling never set up)", "Total 0\n", nil},
		{"two devices", "8:0 Read 1282048\n8:0 Write 2195456\n8:0 Sync 2195456\n8:0 Async 1282048\n8:0 Discard 0\n8:0 Total 3477504\n254:16 Read 4096\n254:16 Write 0\nTotal 3481600\n",
			[]DeviceStats{
				{Major: 8, Minor: 0, Stats: map[string]uint64{"Read": 1282048, "Write": 2195456, "Sync": 2195456, "Async": 1282048, "Discard": 0, "Total": 3477504}},
				{Major: 254, Minor: 16, Stats: map[string]uint64{"Read": 4096, "Write": 0}},
			}},
		{"no operation (sectors)", "8:0 6792\n", []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Count": 6792}}}},
		{"bad lines skipped", "8:0 Read x\nfoo Read 1\n8 Read 2\n8:0 Read 1 extra\n8:0 Write 5\n", []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Write": 5}}}},
	} {
		if got := ParseBlkioV1(tc.content); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestParseIOStat(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          BlockIO
	}{
		{"empty", "", BlockIO{}},
		{"devices", "8:0 rbytes=90112 wbytes=8192 rios=6 wios=2 dbytes=0 dios=0\n259:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6 cost.usage=7\n",
			BlockIO{
				ServiceBytes: []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Read": 90112, "Write": 8192}}, {Major: 259, Minor: 0, Stats: map[string]uint64{"Read": 1, "Write": 2}}},
				Serviced:     []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Read": 6, "Write": 2}}, {Major: 259, Minor: 0, Stats: map[string]uint64{"Read": 3, "Write": 4}}},
			}},
		{"bad values skipped", "8:0 rbytes=x wbytes=8 junk rios=1\nnodev rbytes=1\n",
			BlockIO{ServiceBytes: []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Write": 8}}}, Serviced: []DeviceStats{{Major: 8, Minor: 0, Stats: map[string]uint64{"Read": 1}}}}},
	} {
		if got := ParseIOStat(tc.content); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestReadIO: v1 takes the first file pair whose operations file lists a
// device (BFQ's are empty without the BFQ scheduler, as on these hosts);
// v2 reads io.stat; a missing cgroup or hierarchy has nothing.
func TestReadIO(t *testing.T) {
	root := t.TempDir()
	h, _ := ParseMountInfo(hybrid)
	r := NewReaderAt(h, root)
	cg := "/kubepods/burstable/podx/ctr"
	dir := "sys/fs/cgroup/blkio" + cg + "/"
	write(t, root, dir+"blkio.bfq.io_serviced_recursive", "Total 0\n")
	write(t, root, dir+"blkio.bfq.io_service_bytes_recursive", "Total 0\n")
	write(t, root, dir+"blkio.throttle.io_serviced_recursive", "254:0 Read 2\n254:0 Write 2\nTotal 4\n")
	write(t, root, dir+"blkio.throttle.io_service_bytes_recursive", "254:0 Read 8192\n254:0 Write 8192\nTotal 16384\n")
	write(t, root, dir+"blkio.throttle.io_serviced", "254:0 Read 1\n")
	want := BlockIO{
		Serviced:     []DeviceStats{{Major: 254, Stats: map[string]uint64{"Read": 2, "Write": 2}}},
		ServiceBytes: []DeviceStats{{Major: 254, Stats: map[string]uint64{"Read": 8192, "Write": 8192}}},
	}
	if got := r.ReadIO(cg); !reflect.DeepEqual(got, want) {
		t.Errorf("v1: %+v, want %+v", got, want)
	}
	// BFQ counting: its files win.
	write(t, root, dir+"blkio.bfq.io_serviced_recursive", "8:0 Read 9\n")
	write(t, root, dir+"blkio.bfq.io_service_bytes_recursive", "8:0 Read 900\n")
	if got := r.ReadIO(cg); len(got.Serviced) != 1 || got.Serviced[0].Major != 8 || got.ServiceBytes[0].Stats["Read"] != 900 {
		t.Errorf("v1 bfq: %+v", got)
	}
	// No device anywhere (Linux 6.10+ without a throttling rule): nothing.
	empty := "/kubepods/burstable/podx/idle"
	for _, f := range []string{"blkio.bfq.io_serviced_recursive", "blkio.throttle.io_serviced_recursive", "blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"} {
		write(t, root, "sys/fs/cgroup/blkio"+empty+"/"+f, "Total 0\n")
	}
	if got := r.ReadIO(empty); got.Serviced != nil || got.ServiceBytes != nil {
		t.Errorf("v1 without devices: %+v", got)
	}
	if got := r.ReadIO("/gone"); got.Serviced != nil || got.ServiceBytes != nil {
		t.Errorf("missing cgroup: %+v", got)
	}
	noBlkio := NewReaderAt(Hierarchy{Version: 1, V1: map[string]string{"memory": "/sys/fs/cgroup/memory"}}, root)
	if got := noBlkio.ReadIO(cg); got.Serviced != nil {
		t.Errorf("no blkio hierarchy: %+v", got)
	}

	v2 := NewReaderAt(Hierarchy{Version: 2, Unified: "/sys/fs/cgroup"}, root)
	write(t, root, "sys/fs/cgroup/kubepods.slice/io.stat", "8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n")
	if got := v2.ReadIO("/kubepods.slice"); len(got.ServiceBytes) != 1 || got.ServiceBytes[0].Minor != 16 || got.Serviced[0].Stats["Read"] != 1 {
		t.Errorf("v2: %+v", got)
	}
	if got := v2.ReadIO("/gone"); got.Serviced != nil {
		t.Errorf("v2 missing cgroup: %+v", got)
	}
}
