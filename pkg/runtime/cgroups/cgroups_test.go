package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseMountinfo(t *testing.T) {
	hybrid := `22 1 252:0 / / rw,relatime - ext4 /dev/vda rw
30 22 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
35 30 0:31 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
37 30 0:33 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
38 22 0:33 / /mnt/other\040dir/memory rw - cgroup cgroup rw,memory
`
	l, err := ParseMountinfo(strings.NewReader(hybrid))
	if err != nil {
		t.Fatal(err)
	}
	if l.Version != V1 {
		t.Fatalf("hybrid machine: version %v, want v1", l.Version)
	}
	want := map[string]string{"memory": "/sys/fs/cgroup/memory", "cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "name=systemd": "/sys/fs/cgroup/systemd"}
	for k, v := range want {
		if l.Mounts[k] != v {
			t.Errorf("mount of %s: %q, want %q", k, l.Mounts[k], v)
		}
	}
	if _, ok := l.Mounts["rw"]; ok {
		t.Error("a mount option was taken for a controller")
	}
	if got := l.Dir("memory", "/kubepods/pod1"); got != "/sys/fs/cgroup/memory/kubepods/pod1" {
		t.Errorf("Dir: %s", got)
	}
	if got := l.Dir("pids", "/kubepods"); got != "" {
		t.Errorf("Dir of an unmounted controller: %q", got)
	}
	if got := len(l.MountPoints()); got != 3 {
		t.Errorf("mount points: %v", l.MountPoints())
	}

	unified := `22 1 252:0 / / rw - ext4 /dev/vda rw
30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
`
	l, err = ParseMountinfo(strings.NewReader(unified))
	if err != nil || l.Version != V2 || l.Unified != "/sys/fs/cgroup" {
		t.Fatalf("unified: %+v %v", l, err)
	}
	if got := l.Dir("memory", "/kubepods"); got != "/sys/fs/cgroup/kubepods" {
		t.Errorf("v2 Dir: %s", got)
	}
	if _, err := ParseMountinfo(strings.NewReader("22 1 252:0 / / rw - ext4 /dev/vda rw\n")); err == nil {
		t.Error("no cgroup mounts: want an error")
	}
}

func TestNames(t *testing.T) {
	pod := func(uid string, res v1.ResourceRequirements) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: res}}}}
	}
	guaranteed := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}
	burstable := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}
	for _, tc := range []struct {
		root, driver string
		perQOS       bool
		pod          *v1.Pod
		want         string
		wantPod      bool
	}{
		{"/", DriverCgroupfs, true, pod("a-b", burstable), "/kubepods/burstable/poda-b", true},
		{"/", DriverCgroupfs, true, pod("u1", guaranteed), "/kubepods/podu1", true},
		{"/", DriverCgroupfs, true, pod("u1", v1.ResourceRequirements{}), "/kubepods/besteffort/podu1", true},
		{"/gk-test", DriverCgroupfs, true, pod("u1", v1.ResourceRequirements{}), "/gk-test/kubepods/besteffort/podu1", true},
		{"/", DriverSystemd, true, pod("a-b", burstable), "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b.slice", true},
		{"/", DriverSystemd, true, pod("u1", guaranteed), "/kubepods.slice/kubepods-podu1.slice", true},
		{"/gk.slice", DriverSystemd, true, pod("u1", guaranteed), "/gk.slice/gk-kubepods.slice/gk-kubepods-podu1.slice", true},
		{"/", DriverCgroupfs, false, pod("u1", guaranteed), "/", false},
		{"/custom", DriverCgroupfs, false, pod("u1", guaranteed), "/custom", false},
	} {
		h := Hierarchy{Root: ParseRoot(tc.root, tc.driver), PerQOS: tc.perQOS}
		n, ok := h.Pod(tc.pod)
		if got := n.Path(tc.driver); got != tc.want || ok != tc.wantPod {
			t.Errorf("%s %s perQOS=%v: %s %v, want %s %v", tc.root, tc.driver, tc.perQOS, got, ok, tc.want, tc.wantPod)
		}
	}
	if n := (Name{"kubepods", "burstable", "poda-b"}); n.Unit() != "kubepods-burstable-poda_b.slice" || n.Parent().Unit() != "kubepods-burstable.slice" {
		t.Errorf("units: %s %s", n.Unit(), n.Parent().Unit())
	}
	for _, tc := range []struct {
		base, driver string
		uid          types.UID
		ok           bool
	}{
		{"pod1234-5", DriverCgroupfs, "1234-5", true},
		{"kubepods-burstable-pod1234_5.slice", DriverSystemd, "1234-5", true},
		{"burstable", DriverCgroupfs, "", false},
		{"pod", DriverCgroupfs, "", false},
		{"kubepods-burstable.slice", DriverSystemd, "", false},
	} {
		uid, ok := PodUID(tc.base, tc.driver)
		if uid != tc.uid || ok != tc.ok {
			t.Errorf("PodUID(%s, %s) = %s %v", tc.base, tc.driver, uid, ok)
		}
	}
}

func TestForPod(t *testing.T) {
	q := resource.MustParse
	ctr := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	opts := PodOptions{CFSQuota: true, PidsLimit: 1024}
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		pod  v1.PodSpec
		opts PodOptions
		want Resources
	}{
		{"best effort: minimum shares only", v1.PodSpec{Containers: []v1.Container{ctr(nil, nil)}}, opts,
			Resources{CPUShares: u(2), Pids: i(1024)}},
		{"guaranteed: shares, quota, memory", v1.PodSpec{Containers: []v1.Container{
			ctr(nil, v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi")}),
			ctr(nil, v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("64Mi")})}}, opts,
			Resources{CPUShares: u(768), CPUQuota: i(75000), CPUPeriod: u(100000), Memory: i(192 << 20), Pids: i(1024)}},
		{"burstable without all limits: shares only", v1.PodSpec{Containers: []v1.Container{
			ctr(v1.ResourceList{v1.ResourceCPU: q("100m")}, v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")}),
			ctr(v1.ResourceList{v1.ResourceMemory: q("10Mi")}, nil)}}, PodOptions{CFSQuota: true},
			Resources{CPUShares: u(102)}},
		{"burstable with every limit: quota and memory", v1.PodSpec{Containers: []v1.Container{
			ctr(v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("32Mi")}, v1.ResourceList{v1.ResourceCPU: q("200m"), v1.ResourceMemory: q("64Mi")})}}, PodOptions{CFSQuota: true},
			Resources{CPUShares: u(102), CPUQuota: i(20000), CPUPeriod: u(100000), Memory: i(64 << 20)}},
		{"overhead counted", v1.PodSpec{Overhead: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("120Mi")}, Containers: []v1.Container{
			ctr(nil, v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")})}}, PodOptions{CFSQuota: true},
			Resources{CPUShares: u(1280), CPUQuota: i(125000), CPUPeriod: u(100000), Memory: i(1<<30 + 120<<20)}},
		{"cpuCFSQuota false: no quota", v1.PodSpec{Containers: []v1.Container{
			ctr(nil, v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi")})}}, PodOptions{QuotaPeriod: 50000},
			Resources{CPUShares: u(1024), CPUQuota: i(-1), CPUPeriod: u(50000), Memory: i(1 << 30)}},
		{"tiny limit: minimum quota", v1.PodSpec{Containers: []v1.Container{
			ctr(nil, v1.ResourceList{v1.ResourceCPU: q("1m"), v1.ResourceMemory: q("1Gi")})}}, PodOptions{CFSQuota: true},
			Resources{CPUShares: u(2), CPUQuota: i(1000), CPUPeriod: u(100000), Memory: i(1 << 30)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForPod(&v1.Pod{Spec: tc.pod}, tc.opts)
			if s := describe(got); s != describe(&tc.want) {
				t.Errorf("got %s, want %s", s, describe(&tc.want))
			}
		})
	}
	if w := SharesToWeight(2); w != 1 {
		t.Errorf("weight(2) = %d", w)
	}
	if w := SharesToWeight(1024); w != 39 {
		t.Errorf("weight(1024) = %d", w)
	}
	if w := SharesToWeight(262144); w != 10000 {
		t.Errorf("weight(max) = %d", w)
	}
}

func describe(r *Resources) string {
	var b strings.Builder
	if r.CPUShares != nil {
		fmt.Fprintf(&b, "shares=%d ", *r.CPUShares)
	}
	if r.CPUQuota != nil {
		fmt.Fprintf(&b, "quota=%d ", *r.CPUQuota)
	}
	if r.CPUPeriod != nil {
		fmt.Fprintf(&b, "period=%d ", *r.CPUPeriod)
	}
	if r.Memory != nil {
		fmt.Fprintf(&b, "memory=%d ", *r.Memory)
	}
	if r.Pids != nil {
		fmt.Fprintf(&b, "pids=%d ", *r.Pids)
	}
	return b.String()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// fakeV1 builds a v1 layout in a temporary directory, with the parent
// cpuset values the kernel would show.
func fakeV1(t *testing.T) Layout {
	dir := t.TempDir()
	l := Layout{Version: V1, Mounts: map[string]string{}}
	for _, c := range []string{"cpu", "memory", "pids", "cpuset"} {
		m := filepath.Join(dir, c)
		if err := os.MkdirAll(m, 0o755); err != nil {
			t.Fatal(err)
		}
		l.Mounts[c] = m
	}
	l.Mounts["cpuacct"] = l.Mounts["cpu"]
	os.WriteFile(filepath.Join(dir, "cpuset", "cpuset.cpus"), []byte("0-1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cpuset", "cpuset.mems"), []byte("0\n"), 0o644)
	return l
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestManagerV1(t *testing.T) {
	l := fakeV1(t)
	m := NewWithDriver(Config{Driver: DriverCgroupfs, Root: "/gk", PerQOS: true, Enforce: []string{EnforcePods},
		SystemReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourceCPU: resource.MustParse("500m")},
		Pod:            PodOptions{CFSQuota: true, PidsLimit: 100}}, NewCgroupfs(l))
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), ResourcePID: resource.MustParse("4096")}
	if err := m.Setup(context.Background(), capacity); err != nil {
		t.Fatal(err)
	}
	mem := l.Mounts["memory"]
	if got := read(t, filepath.Join(mem, "gk/kubepods/memory.limit_in_bytes")); got != itoa(3<<30) {
		t.Errorf("kubepods memory limit %s, want capacity less systemReserved", got)
	}
	if got := read(t, filepath.Join(l.Mounts["cpu"], "gk/kubepods/cpu.shares")); got != "1536" {
		t.Errorf("kubepods shares %s", got)
	}
	if got := read(t, filepath.Join(l.Mounts["pids"], "gk/kubepods/pids.max")); got != "4096" {
		t.Errorf("kubepods pids %s", got)
	}
	if got := read(t, filepath.Join(l.Mounts["cpu"], "gk/kubepods/besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort shares %s", got)
	}
	if got := read(t, filepath.Join(l.Mounts["cpuset"], "gk/kubepods/burstable/cpuset.cpus")); got != "0-1" {
		t.Errorf("cpuset not copied down: %q", got)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("300m"), v1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
	if m.PodExists(pod) {
		t.Fatal("pod cgroup exists before EnsurePod")
	}
	created, err := m.EnsurePod(pod)
	if err != nil || !created {
		t.Fatalf("EnsurePod: %v %v", created, err)
	}
	if m.PodParent(pod) != "/gk/kubepods/burstable/podu1" {
		t.Errorf("parent %s", m.PodParent(pod))
	}
	if cg, ok := m.PodCgroup(pod); cg != "/gk/kubepods/burstable/podu1" || !ok {
		t.Errorf("pod cgroup %s %v", cg, ok)
	}
	// Without pod cgroups the parent is the root, which is not the pod's
	// own: its usage is the node's.
	flat := NewWithDriver(Config{Driver: DriverCgroupfs, Root: "/gk"}, NewCgroupfs(l))
	if cg, ok := flat.PodCgroup(pod); ok {
		t.Errorf("without cgroupsPerQOS the pod has its own cgroup %s", cg)
	}
	podCPU := filepath.Join(l.Mounts["cpu"], "gk/kubepods/burstable/podu1")
	for file, want := range map[string]string{"cpu.shares": "102", "cpu.cfs_quota_us": "30000", "cpu.cfs_period_us": "100000"} {
		if got := read(t, filepath.Join(podCPU, file)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	if got := read(t, filepath.Join(mem, "gk/kubepods/burstable/podu1/memory.limit_in_bytes")); got != itoa(64<<20) {
		t.Errorf("pod memory %s", got)
	}
	if got := read(t, filepath.Join(l.Mounts["pids"], "gk/kubepods/burstable/podu1/pids.max")); got != "100" {
		t.Errorf("pod pids %s", got)
	}
	if created, _ := m.EnsurePod(pod); created {
		t.Error("EnsurePod created an existing cgroup again")
	}
	if err := m.UpdateQOS([]*v1.Pod{pod, pod}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(l.Mounts["cpu"], "gk/kubepods/burstable/cpu.shares")); got != "204" {
		t.Errorf("burstable shares %s, want the sum of the requests", got)
	}

	// A resize writes the new limits.
	pod.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("96Mi")
	if err := m.SetPod(pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(mem, "gk/kubepods/burstable/podu1/memory.limit_in_bytes")); got != itoa(96<<20) {
		t.Errorf("pod memory after resize %s", got)
	}

	// Cleanup removes only unclaimed, old enough, empty pod cgroups. The
	// fake directories hold files, so make an empty one for each case.
	for _, mnt := range l.MountPoints() {
		os.MkdirAll(filepath.Join(mnt, "gk/kubepods/besteffort/podgone"), 0o755)
		os.MkdirAll(filepath.Join(mnt, "gk/kubepods/besteffort/podkept"), 0o755)
		os.MkdirAll(filepath.Join(mnt, "gk/kubepods/besteffort/podyoung"), 0o755)
		old := timeAgo(2 * podCgroupMinAgeForTest)
		os.Chtimes(filepath.Join(mnt, "gk/kubepods/besteffort/podgone"), old, old)
		os.Chtimes(filepath.Join(mnt, "gk/kubepods/besteffort/podkept"), old, old)
	}
	n := m.CleanupPods(func(uid types.UID) bool { return uid == "kept" || uid == "u1" })
	if n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(mem, "gk/kubepods/besteffort/podgone")); !os.IsNotExist(err) {
		t.Error("unclaimed pod cgroup was not removed")
	}
	for _, keep := range []string{"podkept", "podyoung"} {
		if _, err := os.Stat(filepath.Join(mem, "gk/kubepods/besteffort", keep)); err != nil {
			t.Errorf("%s was removed", keep)
		}
	}
}

func TestManagerV2(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("cpu memory\n"), 0o644)
	l := Layout{Version: V2, Unified: root}
	d := NewCgroupfs(l)
	n := Name{"kubepods", "besteffort"}
	// The kernel creates cgroup.controllers in every new cgroup; the fake
	// has to be told what the child offers.
	os.MkdirAll(filepath.Join(root, "kubepods"), 0o755)
	os.WriteFile(filepath.Join(root, "kubepods", "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	mem, shares, quota, period, pids := int64(1<<30), uint64(1024), int64(50000), uint64(100000), int64(-1)
	if err := d.Ensure(n, &Resources{Memory: &mem, CPUShares: &shares, CPUQuota: &quota, CPUPeriod: &period, Pids: &pids}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, "cgroup.subtree_control")); got != "+cpuset +io +pids" {
		t.Errorf("root subtree_control: %q (only the missing controllers are added)", got)
	}
	if got := read(t, filepath.Join(root, "kubepods", "cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("kubepods subtree_control: %q", got)
	}
	dir := filepath.Join(root, "kubepods", "besteffort")
	for file, want := range map[string]string{"memory.max": itoa(1 << 30), "cpu.weight": "39", "cpu.max": "50000 100000", "pids.max": "max"} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	none := int64(-1)
	if err := d.Set(n, &Resources{CPUQuota: &none, Memory: &none}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "cpu.max")); got != "max 100000" {
		t.Errorf("cpu.max without quota: %q", got)
	}
	if got := read(t, filepath.Join(dir, "memory.max")); got != "max" {
		t.Errorf("memory.max without limit: %q", got)
	}
}

const podCgroupMinAgeForTest = podCgroupMinAge

func timeAgo(d time.Duration) time.Time { return time.Now().Add(-d) }
