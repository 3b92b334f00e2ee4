package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Unix(100000, 0)

func ctr(id, uid, name string, ageSec int, running bool) Container {
	return Container{ID: id, PodUID: types.UID(uid), Name: name, Running: running, CreatedAt: t0.Add(-time.Duration(ageSec) * time.Second), SandboxID: "sb-" + uid}
}

func created(c Container) Container {
	c.Created = true
	return c
}

func ids(cs []Container) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.ID)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func TestSelectContainers(t *testing.T) {
	live := func(types.UID) (bool, bool) { return false, false }
	state := func(uid types.UID) (bool, bool) {
		switch uid {
		case "gone":
			return true, true
		case "done":
			return false, true
		}
		return false, false
	}
	cs := []Container{
		ctr("a-run", "p1", "a", 10, true),
		ctr("a-1", "p1", "a", 20, false),
		ctr("a-2", "p1", "a", 30, false),
		ctr("a-3", "p1", "a", 40, false),
		ctr("b-1", "p1", "b", 50, false),
		ctr("g-1", "gone", "a", 60, false),
		ctr("g-2", "gone", "b", 70, false),
		ctr("d-1", "done", "a", 80, false),
		ctr("young", "p2", "a", 1, false),
		ctr("young-older", "p2", "a", 2, false),
		// p3's main exited and its next instance is created, not started
		// yet; p3's side has an older created instance that never
		// started, left behind by a newer one that did.
		created(ctr("m-next", "p3", "main", 3, false)),
		ctr("m-exited", "p3", "main", 4, false),
		ctr("m-older", "p3", "main", 9, false),
		ctr("s-run", "p3", "side", 3, true),
		created(ctr("s-stuck", "p3", "side", 5, false)),
		created(ctr("g-next", "gone", "c", 3, false)),
	}
	for _, tc := range []struct {
		name          string
		policy        ContainerPolicy
		state         PodState
		allTerminated bool
		want          string
	}{
		{"default: one dead instance per container, gone pods lose all; an instance about to start is not dead", DefaultContainerPolicy, state, false, "a-2,a-3,g-1,g-2,g-next,m-older,young-older"},
		{"eviction reclaim: terminated pods lose all too", DefaultContainerPolicy, state, true, "a-2,a-3,d-1,g-1,g-2,g-next,m-older,young-older"},
		{"min age keeps young dead containers", ContainerPolicy{MinAge: 5 * time.Second, MaxPerPodContainer: 1, MaxContainers: -1}, state, false, "a-2,a-3,g-1,g-2"},
		{"no per-container limit", ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: -1}, live, false, ""},
		{"total limit: one per group, then the oldest", ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 6}, live, false, "a-2,a-3,d-1,g-2,m-older,young-older"},
		{"zero per container", ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, live, false, "a-1,a-2,a-3,b-1,d-1,g-1,g-2,m-exited,m-older,s-stuck,young,young-older"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectContainers(cs, tc.policy, t0, tc.state, tc.allTerminated)
			if ids(got) != tc.want {
				t.Errorf("got %s, want %s", ids(got), tc.want)
			}
			for _, c := range got {
				if c.Running {
					t.Errorf("a running container was selected: %s", c.ID)
				}
			}
		})
	}
}

func TestSelectSandboxes(t *testing.T) {
	state := func(uid types.UID) (bool, bool) { return uid == "gone", uid == "gone" }
	sbs := []Sandbox{
		{ID: "p1-old", PodUID: "p1", CreatedAt: t0.Add(-time.Hour)},
		{ID: "p1-new", PodUID: "p1", CreatedAt: t0.Add(-time.Minute)},
		{ID: "p1-ready", PodUID: "p1", Ready: true, CreatedAt: t0.Add(-2 * time.Hour)},
		{ID: "p2-only", PodUID: "p2", CreatedAt: t0},
		{ID: "p3-used", PodUID: "p3", CreatedAt: t0.Add(-time.Hour)},
		{ID: "p3-newest", PodUID: "p3", CreatedAt: t0},
		{ID: "gone-1", PodUID: "gone", CreatedAt: t0},
	}
	remaining := []Container{{ID: "c", PodUID: "p3", SandboxID: "p3-used"}}
	got := SelectSandboxes(sbs, remaining, state)
	var s []string
	for _, x := range got {
		s = append(s, x.ID)
	}
	sort.Strings(s)
	if strings.Join(s, ",") != "gone-1,p1-old" {
		t.Errorf("got %v: want the old not-ready sandbox of a live pod and every empty one of a gone pod", s)
	}
}

func rec(id string, size int64, firstAgo, usedAgo time.Duration, keep bool) ImageRecord {
	return ImageRecord{ID: id, Size: size, FirstDetected: t0.Add(-firstAgo), LastUsed: t0.Add(-usedAgo), Keep: keep}
}

func TestImagePolicy(t *testing.T) {
	recs := []ImageRecord{
		rec("in-use", 100, time.Hour, 0, true),
		rec("old-unused", 10, time.Hour, 50*time.Minute, false),
		rec("recent", 20, time.Hour, 5*time.Minute, false),
		rec("new", 30, time.Second, 0, false),
		rec("never-used", 40, 2*time.Hour, 2*time.Hour+time.Nanosecond, false),
	}
	order := EvictionOrder(recs)
	var got []string
	for _, r := range order {
		got = append(got, r.ID)
	}
	if strings.Join(got, ",") != "never-used,old-unused,recent,new" {
		t.Errorf("eviction order %v", got)
	}
	sel := SelectImages(order, 45, t0.Add(time.Second), 2*time.Minute)
	got = nil
	for _, r := range sel {
		got = append(got, r.ID)
	}
	if strings.Join(got, ",") != "never-used,old-unused" {
		t.Errorf("selected %v: want the least recently used until 45 bytes are freed, never a new image", got)
	}
	for _, tc := range []struct {
		capacity, available int64
		want                int64
	}{
		{1000, 500, 0},   // 50% used: below high
		{1000, 150, 50},  // 85% used: down to 80%
		{1000, 100, 100}, // 90% used
		{0, 0, 0},
	} {
		if got := BytesToFree(tc.capacity, tc.available, ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}); got != tc.want {
			t.Errorf("BytesToFree(%d, %d) = %d, want %d", tc.capacity, tc.available, got, tc.want)
		}
	}
}

func TestImageGCDisabled(t *testing.T) {
	for _, tc := range []struct {
		high   int
		maxAge time.Duration
		want   bool
	}{
		{85, 0, false},          // upstream's default
		{99, 0, false},          // collects once usage reaches 99%
		{100, 0, true},          // upstream: "Disable image GC"
		{100, time.Hour, false}, // images past imageMaximumGCAge still go
	} {
		if got := Disabled(ImagePolicy{HighThresholdPercent: tc.high, LowThresholdPercent: 80, MaxAge: tc.maxAge}); got != tc.want {
			t.Errorf("Disabled(high %d, maxAge %v) = %v, want %v", tc.high, tc.maxAge, got, tc.want)
		}
	}
}

func TestContainerGCThroughCRI(t *testing.T) {
	rt := critesting.NewFakeRuntimeService()
	ctx := context.Background()
	mk := func(uid, name string, created time.Time, ready bool) string {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: "ns"}, Labels: map[string]string{labelPodUID: uid}}
		id, err := rt.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		if !ready {
			rt.StopPodSandbox(ctx, id)
		}
		rt.Sandboxes[id].CreatedAt = created.UnixNano()
		return id
	}
	attempt := uint32(0)
	addCtr := func(sb, uid, name string, created time.Time, state runtimeapi.ContainerState) string {
		attempt++
		cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}, Image: &runtimeapi.ImageSpec{Image: "img"},
			Labels: map[string]string{labelPodUID: uid, labelContainerName: name}}
		id, err := rt.CreateContainer(ctx, sb, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt.Containers[id].State = state
		rt.Containers[id].CreatedAt = created.UnixNano()
		return id
	}
	live := mk("live", "live", t0.Add(-time.Minute), true)
	running := addCtr(live, "live", "app", t0.Add(-10*time.Second), runtimeapi.ContainerState_CONTAINER_RUNNING)
	prev := addCtr(live, "live", "app", t0.Add(-20*time.Second), runtimeapi.ContainerState_CONTAINER_EXITED)
	older := addCtr(live, "live", "app", t0.Add(-30*time.Second), runtimeapi.ContainerState_CONTAINER_EXITED)
	goneSb := mk("gone", "gone", t0.Add(-time.Hour), false)
	goneCtr := addCtr(goneSb, "gone", "app", t0.Add(-time.Hour), runtimeapi.ContainerState_CONTAINER_EXITED)

	logs := t.TempDir()
	for _, d := range []string{"ns_live_live", "ns_gone_gone", "ns_orphan_orphan", "not-a-pod"} {
		os.MkdirAll(filepath.Join(logs, d), 0o755)
	}
	// Log links: of a container the collection removes (its log still
	// there), of a listed container whose log is missing for a moment
	// (rotation), of unknown containers with and without a log (started
	// after the listing; removed elsewhere), and a file that is no link.
	linkDir, logFile := t.TempDir(), filepath.Join(logs, "ns_live_live", "0.log")
	os.WriteFile(logFile, []byte("x\n"), 0o644)
	links := map[string]string{
		"live_ns_app-" + older + ".log":   logFile,
		"live_ns_app-" + running + ".log": filepath.Join(logs, "rotating.log"),
		"new_ns_app-unlisted1.log":        logFile,
		"old_ns_app-unlisted2.log":        filepath.Join(logs, "gone.log"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(linkDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(linkDir, "plain_ns_app-unlisted3.log"), nil, 0o644)

	ready := false
	g := &ContainerGC{Runtime: rt, Policy: DefaultContainerPolicy, PodLogsDir: logs, LogSymlinkDir: linkDir, Clock: clocktesting.NewFakeClock(t0),
		State: func(uid types.UID) (bool, bool) { return uid != "live", uid != "live" },
		Ready: func() bool { return ready }}
	if err := g.collect(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := rt.Containers[goneCtr]; !ok {
		t.Fatal("a pod was taken for gone before every source reported")
	}
	if _, ok := rt.Containers[older]; ok {
		t.Error("the older dead instance of a live container was kept")
	}
	ready = true
	if err := g.collect(ctx, false); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{running: true, prev: true, older: false, goneCtr: false} {
		if _, ok := rt.Containers[id]; ok != want {
			t.Errorf("container %s present=%v, want %v", id, ok, want)
		}
	}
	if _, ok := rt.Sandboxes[goneSb]; ok {
		t.Error("the gone pod's sandbox was kept")
	}
	if _, ok := rt.Sandboxes[live]; !ok {
		t.Error("the live pod's sandbox was removed")
	}
	var left []string
	entries, _ := os.ReadDir(logs)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if fmt.Sprint(left) != "[not-a-pod ns_live_live]" {
		t.Errorf("log dirs left: %v", left)
	}
	left = nil
	entries, _ = os.ReadDir(linkDir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := fmt.Sprint([]string{"live_ns_app-" + running + ".log", "new_ns_app-unlisted1.log", "plain_ns_app-unlisted3.log"})
	if fmt.Sprint(left) != want {
		t.Errorf("log links left: %v, want %v", left, want)
	}
}

func TestLogSymlinkContainerID(t *testing.T) {
	for name, want := range map[string]string{
		"web-1_ns_app-0123abcd.log": "0123abcd",
		"web_ns_app.log":            "",
		"web_ns_app-.log":           "",
		"web_ns_app-abc.txt":        "",
	} {
		got, ok := logSymlinkContainerID(name)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", name, got, ok, want)
		}
	}
}
