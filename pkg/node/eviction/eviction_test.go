package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const Mi = 1 << 20

func TestParse(t *testing.T) {
	ths, err := Parse(Config{
		Hard:                   map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "0%"},
		Soft:                   map[string]string{"memory.available": "300Mi"},
		SoftGracePeriod:        map[string]string{"memory.available": "1m30s"},
		MinimumReclaim:         map[string]string{"memory.available": "50Mi", "nodefs.available": "1Gi"},
		EnforceNodeAllocatable: []string{"pods"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, th := range ths {
		s := th.String()
		if th.MinReclaim != nil {
			s += " min " + th.MinReclaim.String()
		}
		got = append(got, s)
	}
	want := []string{
		"memory.available<100Mi min 50Mi",
		"nodefs.available<10% min 1Gi",
		"memory.available<300Mi for 1m30s min 50Mi",
		"allocatableMemory.available<100Mi min 50Mi",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	for _, bad := range []Config{
		{Hard: map[string]string{"memory.free": "1Mi"}},
		{Hard: map[string]string{"memory.available": "-1Mi"}},
		{Hard: map[string]string{"memory.available": "0"}},
		{Hard: map[string]string{"nodefs.available": "120%"}},
		{Soft: map[string]string{"memory.available": "1Mi"}},
		{Soft: map[string]string{"memory.available": "1Mi"}, SoftGracePeriod: map[string]string{"memory.available": "soon"}},
		{MinimumReclaim: map[string]string{"pid.free": "1"}},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
	if v := (Value{Percentage: 0.1}).Amount(1000); v != 100 {
		t.Errorf("10%% of 1000 = %d", v)
	}
}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestStateUpdate(t *testing.T) {
	hard := Threshold{Signal: MemoryAvailable, Value: Value{Quantity: q("100Mi")}, MinReclaim: &Value{Quantity: q("50Mi")}}
	soft := Threshold{Signal: NodeFsAvailable, Value: Value{Percentage: 0.2}, GracePeriod: time.Minute}
	ths := []Threshold{soft, hard}
	t0 := time.Unix(1000, 0)
	obs := func(at time.Time, memAvail, fsAvail int64) Observations {
		return Observations{
			MemoryAvailable: {Available: memAvail, Capacity: 1000 * Mi, Time: at},
			NodeFsAvailable: {Available: fsAvail, Capacity: 1000, Time: at},
		}
	}
	var s State
	steps := []struct {
		at         time.Duration
		mem, fs    int64
		wantConds  string
		wantAct    string
		explaining string
	}{
		{0, 500 * Mi, 500, "[]", "", "nothing met"},
		{10 * time.Second, 80 * Mi, 100, "[DiskPressure MemoryPressure]", "memory.available", "hard acts at once, soft waits"},
		{20 * time.Second, 120 * Mi, 100, "[DiskPressure MemoryPressure]", "memory.available", "memory above the threshold but within the minimum reclaim: still reclaiming"},
		{30 * time.Second, 200 * Mi, 100, "[DiskPressure MemoryPressure]", "", "memory reclaimed; the condition is held for the transition period"},
		{80 * time.Second, 200 * Mi, 100, "[DiskPressure MemoryPressure]", "nodefs.available", "the soft threshold was met for its grace period"},
		{80*time.Second + 5*time.Minute, 200 * Mi, 500, "[]", "", "pressure gone for the transition period"},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		step := s.Update(ths, obs(now, st.mem, st.fs), now, time.Minute*5)
		var act []string
		for _, a := range step.Act {
			act = append(act, string(a.Signal))
		}
		if got := strings.Join(act, ","); got != st.wantAct {
			t.Errorf("at %v (%s): act %q, want %q", st.at, st.explaining, got, st.wantAct)
		}
		if got := formatConds(step.Conditions); got != st.wantConds {
			t.Errorf("at %v (%s): conditions %s, want %s", st.at, st.explaining, got, st.wantConds)
		}
	}
	// The same observation twice does not act twice.
	var s2 State
	o := obs(t0, 10*Mi, 500)
	if n := len(s2.Update(ths, o, t0, time.Minute).Act); n != 1 {
		t.Fatalf("first pass: %d to act", n)
	}
	if n := len(s2.Update(ths, o, t0.Add(time.Second), time.Minute).Act); n != 0 {
		t.Errorf("a stale observation acted again (%d)", n)
	}
}

func formatConds(c []v1.NodeConditionType) string {
	var s []string
	for _, x := range c {
		s = append(s, string(x))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func pod(name string, prio int32, req, lim v1.ResourceList) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: ptr.To(prio), Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}}
}

func names(pods []*v1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name)
	}
	return strings.Join(s, ",")
}

func TestRank(t *testing.T) {
	mem := func(s string) v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)} }
	guaranteed := pod("guaranteed", 0, nil, v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourceCPU: resource.MustParse("1")})
	bestEffort := pod("besteffort", 0, nil, nil)
	burstableUnder := pod("burstable-under", 0, mem("500Mi"), nil)
	burstableOver := pod("burstable-over", 0, mem("100Mi"), nil)
	important := pod("important-besteffort", 1000, nil, nil)
	unknown := pod("unmeasured", 0, nil, nil)
	usage := map[string]PodUsage{
		"guaranteed":           {Memory: 900 * Mi, Processes: 5},
		"besteffort":           {Memory: 50 * Mi, Processes: 100, Logs: 10 * Mi, Volumes: 500 * Mi},
		"burstable-under":      {Memory: 400 * Mi, Processes: 3, Rootfs: 900 * Mi},
		"burstable-over":       {Memory: 300 * Mi, Processes: 1},
		"important-besteffort": {Memory: 2000 * Mi, Processes: 1000},
	}
	f := func(p *v1.Pod) (PodUsage, bool) { u, ok := usage[p.Name]; return u, ok }
	for _, tc := range []struct {
		signal    Signal
		dedicated bool
		want      string
	}{
		// Usage above request first, then lower priority, then the most
		// above request; the guaranteed pod within its request is last.
		{MemoryAvailable, false, "unmeasured,burstable-over,besteffort,important-besteffort,burstable-under,guaranteed"},
		{PIDAvailable, false, "unmeasured,besteffort,guaranteed,burstable-under,burstable-over,important-besteffort"},
		// One filesystem: everything counts; nobody requests disk, so the
		// pods using some go first, the most first, then the others by
		// priority (the high priority pod last).
		{NodeFsAvailable, false, "unmeasured,burstable-under,besteffort,guaranteed,burstable-over,important-besteffort"},
		// A dedicated imagefs: nodefs counts logs and volumes only...
		{NodeFsAvailable, true, "unmeasured,besteffort,guaranteed,burstable-under,burstable-over,important-besteffort"},
		// ... and imagefs the writable layers.
		{ImageFsAvailable, true, "unmeasured,burstable-under,guaranteed,besteffort,burstable-over,important-besteffort"},
	} {
		pods := []*v1.Pod{guaranteed, bestEffort, burstableUnder, burstableOver, important, unknown}
		Rank(pods, tc.signal, tc.dedicated, f)
		if got := names(pods); got != tc.want {
			t.Errorf("%s dedicated=%v:\n got  %s\n want %s", tc.signal, tc.dedicated, got, tc.want)
		}
	}
}

func TestMessageAndAdmit(t *testing.T) {
	p := pod("hog", 0, nil, nil)
	th := Threshold{Signal: MemoryAvailable, Value: Value{Quantity: q("100Mi")}}
	obs := Observations{MemoryAvailable: {Available: 52 * Mi, Capacity: 4096 * Mi}}
	msg := Message(v1.ResourceMemory, p, PodUsage{Containers: map[string]ContainerUsage{"c": {Memory: 300 * Mi}}}, true, th, obs)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi. Container c was using 300Mi, request is 0, has larger consumption of memory. "
	if msg != want {
		t.Errorf("message:\n got  %q\n want %q", msg, want)
	}
	be := pod("be", 0, nil, nil)
	bu := pod("bu", 0, v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}, nil)
	tolerating := pod("tol", 0, nil, nil)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	critical := pod("crit", 2000000000, nil, nil)
	memory := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeDiskPressure}
	for _, tc := range []struct {
		pod   *v1.Pod
		conds []v1.NodeConditionType
		admit bool
	}{
		{be, nil, true},
		{be, memory, false},
		{bu, memory, true},
		{tolerating, memory, true},
		{bu, disk, false},
		{tolerating, disk, false},
		{critical, disk, true},
		{critical, append(memory, v1.NodePIDPressure), true},
	} {
		ok, reason, msg := Admit(tc.pod, tc.conds)
		if ok != tc.admit {
			t.Errorf("%s under %v: admit %v, want %v", tc.pod.Name, tc.conds, ok, tc.admit)
		}
		if !ok && (reason != "Evicted" || !strings.HasPrefix(msg, "The node had condition: [")) {
			t.Errorf("refusal: %q %q", reason, msg)
		}
	}
}

// fakes for the manager.
type fakeObserver struct{ obs Observations }

func (f *fakeObserver) Observe(context.Context) (Observations, bool, error) { return f.obs, false, nil }

type fakePods struct {
	pods    []*v1.Pod
	evicted []string
	grace   []int64
	msgs    []string
}

func (f *fakePods) ActivePods() []*v1.Pod { return append([]*v1.Pod(nil), f.pods...) }
func (f *fakePods) EvictPod(p *v1.Pod, g int64, msg string) {
	f.evicted = append(f.evicted, p.Name)
	f.grace = append(f.grace, g)
	f.msgs = append(f.msgs, msg)
}
func (f *fakePods) PodCleanedUp(types.UID) bool { return true }

func TestManagerSynchronize(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	obs := &fakeObserver{}
	critical := pod("static", 0, nil, nil)
	critical.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	guaranteed := pod("guaranteed", 0, nil, v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourceCPU: resource.MustParse("1")})
	hog := pod("hog", 0, nil, nil)
	limited := pod("limited", 0, nil, v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")})
	pods := &fakePods{pods: []*v1.Pod{critical, guaranteed, hog}}
	usage := map[string]PodUsage{"static": {Memory: 5000 * Mi}, "guaranteed": {Memory: 900 * Mi}, "hog": {Memory: 600 * Mi},
		"limited": {Rootfs: 5 * Mi, Logs: 6 * Mi, Containers: map[string]ContainerUsage{"c": {Rootfs: 5 * Mi, Logs: 6 * Mi}}}}
	reclaims := 0
	freed := false
	m := New(Options{
		Thresholds: []Threshold{
			{Signal: MemoryAvailable, Value: Value{Quantity: q("100Mi")}},
			{Signal: NodeFsAvailable, Value: Value{Quantity: q("1Gi")}},
		},
		TransitionPeriod:   time.Minute,
		LocalStorageLimits: true,
		Observer:           obs,
		Pods:               pods,
		Usage: func(context.Context, []*v1.Pod) UsageFunc {
			return func(p *v1.Pod) (PodUsage, bool) { u, ok := usage[p.Name]; return u, ok }
		},
		Reclaim: func(s Signal, _ bool) []Reclaimer {
			if s != NodeFsAvailable {
				return nil
			}
			return []Reclaimer{func(context.Context) error {
				reclaims++
				if freed {
					obs.obs[NodeFsAvailable] = Observation{Available: 5 << 30, Capacity: 10 << 30, Time: clk.Now()}
				}
				return nil
			}}
		},
		Recorder: record.NewFakeRecorder(100),
		Clock:    clk,
	})
	ctx := context.Background()
	fresh := func(mem, fs int64) {
		clk.Step(10 * time.Second)
		obs.obs = Observations{MemoryAvailable: {Available: mem, Capacity: 8000 * Mi, Time: clk.Now()},
			NodeFsAvailable: {Available: fs, Capacity: 10 << 30, Time: clk.Now()}}
	}

	fresh(4000*Mi, 5<<30)
	if p := m.Synchronize(ctx); p != nil || len(m.Conditions()) != 0 {
		t.Fatalf("no pressure: evicted %v, conditions %v", p, m.Conditions())
	}
	// Memory pressure: the best-effort hog goes, not the guaranteed pod
	// (within its request) nor the static pod (critical).
	fresh(50*Mi, 5<<30)
	p := m.Synchronize(ctx)
	if p == nil || p.Name != "hog" || pods.grace[0] != 1 {
		t.Fatalf("memory pressure: evicted %v (grace %v), want hog with 1s", p, pods.grace)
	}
	if !strings.Contains(pods.msgs[0], "The node was low on resource: memory.") {
		t.Errorf("message %q", pods.msgs[0])
	}
	if ok, _, _ := m.Admit(pod("new-besteffort", 0, nil, nil)); ok {
		t.Error("a best-effort pod was admitted under memory pressure")
	}
	// Disk pressure that container and image GC relieve evicts nobody.
	pods.pods = []*v1.Pod{critical, guaranteed}
	freed = true
	fresh(4000*Mi, 100*Mi)
	if p := m.Synchronize(ctx); p != nil || reclaims != 1 {
		t.Errorf("disk pressure relieved by GC: evicted %v, reclaims %d", p, reclaims)
	}
	// Only a critical pod is left over its request: nothing can go.
	freed = false
	fresh(50*Mi, 5<<30)
	if p := m.Synchronize(ctx); p == nil || p.Name != "guaranteed" {
		t.Errorf("evicted %v, want the guaranteed pod once nothing else is left", p)
	}
	pods.pods = []*v1.Pod{critical}
	fresh(50*Mi, 5<<30)
	if p := m.Synchronize(ctx); p != nil {
		t.Errorf("a critical pod was evicted: %v", p.Name)
	}
	// A pod past its ephemeral-storage limit goes without node pressure.
	pods.pods = []*v1.Pod{limited}
	fresh(4000*Mi, 5<<30)
	clk.Step(2 * time.Minute)
	if p := m.Synchronize(ctx); p == nil || p.Name != "limited" {
		t.Fatalf("local storage limit: evicted %v", p)
	}
	if msg := pods.msgs[len(pods.msgs)-1]; msg != `Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ` {
		t.Errorf("local storage message %q", msg)
	}
}

// The host observer measures every signal on this machine; images on the
// same filesystem as the root dir are not dedicated.
func TestHostObserverOnThisMachine(t *testing.T) {
	l, err := cgroupsLayoutForTest()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := &HostObserver{MemoryRoot: l, RootDir: dir,
		ImageFs: func(context.Context) (string, error) { return dir, nil }}
	obs, dedicated, err := o.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if dedicated {
		t.Error("one directory taken for a dedicated image filesystem")
	}
	for _, s := range []Signal{MemoryAvailable, NodeFsAvailable, NodeFsInodesFree, ImageFsAvailable, ImageFsInodesFree, ContainerFsAvailable, PIDAvailable} {
		ob, ok := obs[s]
		if !ok || ob.Capacity <= 0 || ob.Available < 0 || ob.Available > ob.Capacity {
			t.Errorf("%s: %+v (observed %v)", s, ob, ok)
		}
	}
}
