package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

func TestEmptyDirDefaultMedium(t *testing.T) {
	e := newEnv(t)
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	p := pod("u1", vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	e.setUp(p)
	dir := e.volDir(p, dirEmptyDir, "scratch")
	if m := mode(t, dir); m.Perm() != 0o777 || !m.IsDir() {
		t.Errorf("mode %v, want drwxrwxrwx", m)
	}
	if isTmpfs(t, dir) && !isTmpfs(t, e.root) {
		t.Error("default medium on tmpfs")
	}
	if _, err := os.Stat(filepath.Join(e.root, "pods/u1/plugins", dirEmptyDir, "scratch/ready")); err != nil {
		t.Errorf("ready marker: %v", err)
	}
	// Content survives later set-ups (and a restarted kubelet: new Manager).
	os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o600)
	os.Chmod(dir, 0o750) // a container may change its root's mode
	m2 := New(e.m.opts)
	if err := m2.SetUpPod(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "data")) != "x" || mode(t, dir).Perm() != 0o750 {
		t.Error("a set-up volume was reset")
	}
}

func TestEmptyDirMemoryAndFSGroup(t *testing.T) {
	e := newEnv(t)
	p := pod("u1", vol("mem", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("10Mi"))}}))
	p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](123)}
	e.setUp(p)
	dir := e.volDir(p, dirEmptyDir, "mem")
	if !isTmpfs(t, dir) {
		t.Fatal("not a tmpfs")
	}
	var fs unix.Statfs_t
	unix.Statfs(dir, &fs)
	if size := int64(fs.Blocks) * fs.Bsize; size != 10<<20 {
		t.Errorf("tmpfs size %d, want 10Mi", size)
	}
	st := statT(t, dir)
	if st.Gid != 123 || st.Mode&unix.S_ISGID == 0 || st.Mode&0o777 != 0o777 {
		t.Errorf("root gid %d mode %o: want group 123, setgid, rwxrwxrwx", st.Gid, st.Mode&0o7777)
	}
	// Files created in it inherit the group.
	os.WriteFile(filepath.Join(dir, "new"), nil, 0o660)
	if st := statT(t, filepath.Join(dir, "new")); st.Gid != 123 {
		t.Errorf("new file gid %d", st.Gid)
	}
	// Teardown unmounts and removes.
	if err := e.m.TearDownPod(context.Background(), p.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("volume dir after teardown: %v", err)
	}
	if n := mountsUnder(t, e.root); n != 0 {
		t.Errorf("%d mounts left", n)
	}
}

func TestMemoryVolumeSize(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	limited := func(limits ...string) *v1.Pod {
		p := &v1.Pod{}
		for _, l := range limits {
			c := v1.Container{}
			if l != "" {
				c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(l)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		return p
	}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		limit *resource.Quantity
		alloc v1.ResourceList
		want  int64
	}{
		{"node allocatable", limited(""), nil, alloc, 1 << 30},
		{"pod limit when all containers have one", limited("100Mi", "28Mi"), nil, alloc, 128 << 20},
		{"no pod limit when one container lacks it", limited("100Mi", ""), nil, alloc, 1 << 30},
		{"sizeLimit lowest", limited("100Mi"), q("10Mi"), alloc, 10 << 20},
		{"sizeLimit above the pod limit", limited("100Mi"), q("1Gi"), alloc, 100 << 20},
		{"nothing known", limited(""), nil, nil, 0},
	} {
		if got := memoryVolumeSize(tc.pod, tc.limit, tc.alloc); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDiskEmptyDirOverItsSizeLimitEvictsThePod(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	counted := func() float64 {
		f, err := metricstest.ScrapeHandler(compbase.HandlerFor(reg, compbase.HandlerOpts{}), "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return f.Sum("kubelet_evictions", map[string]string{"eviction_signal": "emptydirfs.limit"})
	}
	before := counted()
	e := newEnv(t)
	var evicted []string
	e.m.opts.Evict = func(uid types.UID, msg string) { evicted = append(evicted, string(uid)+": "+msg) }
	limited := pod("u1", vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}))
	unlimited := pod("u2", vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	e.setUp(limited)
	e.setUp(unlimited)
	ctx := context.Background()
	os.WriteFile(filepath.Join(e.volDir(limited, dirEmptyDir, "scratch"), "small"), make([]byte, 512<<10), 0o644)
	os.WriteFile(filepath.Join(e.volDir(unlimited, dirEmptyDir, "scratch"), "big"), make([]byte, 4<<20), 0o644)
	e.m.CheckSizeLimits(ctx)
	if len(evicted) != 0 {
		t.Fatalf("evicted under the limit: %v", evicted)
	}
	os.WriteFile(filepath.Join(e.volDir(limited, dirEmptyDir, "scratch"), "big"), make([]byte, 1<<20), 0o644)
	e.m.CheckSizeLimits(ctx)
	e.m.CheckSizeLimits(ctx)
	if len(evicted) != 1 || evicted[0] != `u1: Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` {
		t.Errorf("evictions %q, want u1 once", evicted)
	}
	if got := counted() - before; got != 1 {
		t.Errorf("kubelet_evictions{eviction_signal=emptydirfs.limit} grew by %v, want 1", got)
	}
}

func TestEmptyDirMode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		on     bool
		medium v1.StorageMedium
		mode   int32
		fsGrp  *int64
		want   uint32 // st_mode & 07777
	}{
		{name: "gate on, disk", on: true, mode: 0o750, want: 0o750},
		{name: "gate on, memory: the tmpfs root", on: true, medium: v1.StorageMediumMemory, mode: 0o700, want: 0o700},
		{name: "gate on, sticky", on: true, mode: 0o1777, want: 0o1777},
		{name: "gate on, fsGroup overrides", on: true, mode: 0o700, fsGrp: ptr.To[int64](123), want: 0o2770},
		{name: "gate off: ignored, 0777", on: false, mode: 0o700, want: 0o777},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.m.opts.EmptyDirMode = tc.on
			p := pod("u1", vol("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: tc.medium, Mode: ptr.To(tc.mode)}}))
			if tc.fsGrp != nil {
				p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: tc.fsGrp}
			}
			e.setUp(p)
			dir := e.volDir(p, dirEmptyDir, "scratch")
			if got := statT(t, dir).Mode & 0o7777; got != tc.want {
				t.Errorf("mode %o, want %o", got, tc.want)
			}
			if tc.medium == v1.StorageMediumMemory && !isTmpfs(t, dir) {
				t.Error("not a tmpfs")
			}
			events := e.events()
			if warned := hasEvent(events, EventFieldsIgnored, `volume "scratch" sets emptyDir.mode`, "EmptyDirVolumeMode feature gate is off"); warned == tc.on {
				t.Errorf("events %v: a warning is wanted only with the gate off", events)
			}
			if err := e.m.TearDownPod(context.Background(), p.UID); err != nil {
				t.Fatal(err)
			}
		})
	}
}
