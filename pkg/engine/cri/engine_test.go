package cri

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/allocation"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/volume"
)

// harness runs a standalone node core and the engine on a fake runtime,
// in-process, with the real loops.
type harness struct {
	t       *testing.T
	core    *node.Core
	rt      *fakeRuntime
	eng     *Engine
	updates chan podconfig.PodUpdate
	seenAll atomic.Bool
}

func smallNode(context.Context) (nodestatus.Facts, error) {
	return nodestatus.Facts{
		Capacity: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("2"),
			v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		},
		Labels:    map[string]string{v1.LabelOSStable: "linux"},
		Readiness: nodestatus.Readiness{RuntimeReady: true, NetworkReady: true},
	}, nil
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newObservedHarness(t, nil)
}

// newObservedHarness is newHarness with an Observer.
func newObservedHarness(t *testing.T, obs Observer) *harness {
	t.Helper()
	return newHarnessWith(t, func(d *Deps) { d.Observer = obs })
}

// newHarnessWith is newHarness with the engine's Deps changed by mut.
func newHarnessWith(t *testing.T, mut func(*Deps)) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	core, err := node.New(ctx, node.Options{Config: nodestatus.Config{NodeName: "n1", MaxPods: 110}, Facts: nodestatus.FactsFunc(smallNode)})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, core: core, rt: newFakeRuntime(), updates: make(chan podconfig.PodUpdate, 10)}
	vols := volume.New(volume.Options{RootDir: t.TempDir(), Objects: core.Objects(), Tokens: core.Tokens(),
		NodeAllocatable: func() v1.ResourceList { return core.Node().Status.Allocatable },
		Recorder:        core.Recorder(), Clock: clock.RealClock{},
		Resync: func(uid types.UID) { h.eng.Resync(uid) }, Evict: func(uid types.UID, msg string) { h.eng.Evict(uid, msg) }})
	alloc, err := allocation.New("")
	if err != nil {
		t.Fatal(err)
	}
	deps := Deps{Core: core, Runtime: h.rt, Volumes: vols, Allocation: alloc, Updates: h.updates, Sources: []string{podspec.SourceFile},
		SeenAllSources: func(...string) bool { return h.seenAll.Load() }, Resync: time.Minute}
	mut(&deps)
	h.eng = New(deps)
	var g runnable.Group
	core.AddTo(g.Stage("core"))
	h.eng.AddTo(g.Stage("engine"), g.Stage("sync-loop"))
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("group: %v", err)
		}
		core.Shutdown()
	})
	return h
}

func (h *harness) send(op podconfig.Op, pods ...*v1.Pod) {
	h.updates <- podconfig.PodUpdate{Op: op, Source: podspec.SourceFile, Pods: pods}
}

func (h *harness) phase(uid types.UID) v1.PodPhase {
	st, _ := h.core.Status().GetPodStatus(uid)
	return st.Phase
}

// testPod is a static pod (source file); apiPod makes it an API pod.
func testPod(uid, name string, cpu string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default",
			CreationTimestamp: metav1.Now(), Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

func TestAdmittedPodRunsAndReportsRunning(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", "web", "500m")
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the pod Running", func() bool { return h.phase("u1") == v1.PodRunning })
	if !h.eng.RunsStaticPod("u1") {
		t.Errorf("an admitted static pod does not count as running (no mirror pod would be made)")
	}
	if h.eng.PodTerminated("u1") {
		t.Errorf("a running pod counts as terminated")
	}
}

func apiPod(p *v1.Pod) *v1.Pod {
	p.Annotations[podspec.ConfigSourceAnnotation] = podspec.SourceAPI
	return p
}

// Admission applies standalone too (against the Node built from local
// facts), decides once, and a rejected pod never reaches the runtime.
// (Static pods are critical and skip the resource checks, as upstream, so
// this uses API pods.)
func TestAdmissionRejectsOnceAndRemembers(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	outOfCPU := func() float64 {
		return metricstest.ScrapeRegistry(t, reg).Sum("kubelet_admission_rejections_total", map[string]string{"reason": "OutOfcpu"})
	}
	before := outOfCPU()
	h := newHarness(t)
	big := apiPod(testPod("big", "big", "10"))
	h.send(podconfig.ADD, big)
	eventually.True(h.t, "the pod Failed", func() bool { return h.phase("big") == v1.PodFailed })
	st, _ := h.core.Status().GetPodStatus("big")
	if st.Reason != "OutOfcpu" {
		t.Errorf("reason = %q, want OutOfcpu", st.Reason)
	}
	// An update of the rejected pod is not admitted again, even though
	// the node is empty.
	h.send(podconfig.UPDATE, big)
	small := apiPod(testPod("small", "small", "100m"))
	h.send(podconfig.ADD, small)
	eventually.True(h.t, "the small pod Running", func() bool { return h.phase("small") == v1.PodRunning })
	if n := h.rt.count("SyncPod"); n != 1 {
		t.Errorf("SyncPod calls = %d, want 1 (only the small pod)", n)
	}
	// One rejection counted, under upstream's label for the reason.
	if d := outOfCPU() - before; d != 1 {
		t.Errorf("kubelet_admission_rejections_total{reason=OutOfcpu} grew by %v, want 1", d)
	}
}

// A critical pod's in-place resize that needs room preempts as its
// admission would (upstream, with InPlacePodVerticalScalingSchedulerPreemption
// off); with the gate on, the resize is deferred and nothing is stopped.
func TestCriticalPodResizePreempts(t *testing.T) {
	critical := func(p *v1.Pod) *v1.Pod {
		p.Spec.Priority = ptr.To[int32](podspec.SystemCriticalPriority)
		return p
	}
	for _, schedulerPreempts := range []bool{false, true} {
		t.Run(fmt.Sprintf("InPlacePodVerticalScalingSchedulerPreemption=%v", schedulerPreempts), func(t *testing.T) {
			h := newHarnessWith(t, func(d *Deps) {
				d.Features = d.Features.With(features.InPlacePodVerticalScalingSchedulerPreemption, schedulerPreempts)
			})
			crit := critical(apiPod(testPod("crit", "crit", "500m")))
			h.send(podconfig.ADD, apiPod(testPod("big", "big", "1200m")), crit)
			eventually.True(h.t, "both pods Running", func() bool { return h.phase("big") == v1.PodRunning && h.phase("crit") == v1.PodRunning })

			resized := crit.DeepCopy()
			resized.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
			h.send(podconfig.UPDATE, resized)
			allocatedCPU := func() string {
				st, _ := h.core.Status().GetPodStatus("crit")
				if len(st.ContainerStatuses) == 0 {
					return ""
				}
				q := st.ContainerStatuses[0].AllocatedResources[v1.ResourceCPU]
				return q.String()
			}
			if !schedulerPreempts {
				eventually.True(h.t, "the resize allocated and the big pod Failed", func() bool {
					return allocatedCPU() == "1" && h.phase("big") == v1.PodFailed
				})
				if st, _ := h.core.Status().GetPodStatus("big"); st.Reason != "Preempting" {
					t.Errorf("preempted pod's status: %q %q", st.Reason, st.Message)
				}
				return
			}
			eventually.True(h.t, "the resize deferred", func() bool {
				st, _ := h.core.Status().GetPodStatus("crit")
				c := podspec.FindCondition(st.Conditions, v1.PodResizePending)
				return c != nil && c.Reason == v1.PodReasonDeferred
			})
			if got := allocatedCPU(); got != "500m" {
				t.Errorf("allocated cpu %s, want 500m: a deferred resize allocates nothing", got)
			}
			if h.phase("big") != v1.PodRunning {
				t.Errorf("the big pod was stopped: %s", h.phase("big"))
			}
		})
	}
}

// Admission counts the other pods at their allocated resources: a pending
// (here infeasible) resize of one pod takes nothing from the next pod
// (TestInPlaceResize's second pod was rejected OutOfmemory).
func TestAdmissionCountsAllocatedNotResizedSpecs(t *testing.T) {
	h := newHarness(t)
	a := apiPod(testPod("a", "a", "1"))
	h.send(podconfig.ADD, a)
	eventually.True(h.t, "a Running", func() bool { return h.phase("a") == v1.PodRunning })
	resized := a.DeepCopy()
	resized.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("100")
	h.send(podconfig.UPDATE, resized)
	eventually.True(h.t, "a's resize pending", func() bool {
		st, _ := h.core.Status().GetPodStatus("a")
		return podspec.FindCondition(st.Conditions, v1.PodResizePending) != nil
	})
	b := apiPod(testPod("b", "b", "800m"))
	h.send(podconfig.ADD, b)
	eventually.True(h.t, "b admitted and Running", func() bool { return h.phase("b") != "" && h.phase("b") != v1.PodPending })
	if ph := h.phase("b"); ph != v1.PodRunning {
		st, _ := h.core.Status().GetPodStatus("b")
		t.Errorf("b is %s (%s: %s), want Running: a's allocation is 1 CPU of 2", ph, st.Reason, st.Message)
	}
}

// A static pod rejected by admission (here: a host port already taken)
// does not count as running, so it gets no mirror pod.
func TestRejectedStaticPodGetsNoMirror(t *testing.T) {
	h := newHarness(t)
	withPort := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
		return p
	}
	h.send(podconfig.ADD, withPort(testPod("first", "first", "")))
	eventually.True(h.t, "the first pod Running", func() bool { return h.phase("first") == v1.PodRunning })
	h.send(podconfig.ADD, withPort(testPod("second", "second", "")))
	eventually.True(h.t, "the second pod Failed", func() bool { return h.phase("second") == v1.PodFailed })
	if h.eng.RunsStaticPod("second") {
		t.Errorf("a rejected static pod counts as running (it would get a mirror pod)")
	}
	if !h.eng.RunsStaticPod("first") {
		t.Errorf("the admitted static pod does not count as running")
	}
}

// A RECONCILE (status-only change in the source) updates the desired pod
// but starts no work.
func TestReconcileDoesNotSync(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", "web", "")
	h.send(podconfig.RECONCILE, p)
	eventually.True(h.t, "the pod recorded", func() bool { return h.core.Pods().Has("u1") })
	// A later ADD of another pod is handled after the RECONCILE, so once
	// it runs, the RECONCILE has been handled too.
	h.send(podconfig.ADD, testPod("u2", "other", ""))
	eventually.True(h.t, "the other pod Running", func() bool { return h.phase("u2") == v1.PodRunning })
	if _, ok := h.eng.workers.Get("u1"); ok {
		t.Errorf("RECONCILE started a pod worker")
	}
}

// Orphans (runtime pods no source wants) are only stopped once every
// source has reported, so a restarted kubelet never kills pods it simply
// has not heard of yet.
func TestOrphansWaitForEverySource(t *testing.T) {
	h := newHarness(t)
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	before := scrapeRegistry(t, r).Sum("kubelet_orphaned_runtime_pods_total", nil)
	h.rt.run("orphan", "default", "left-behind", "c")
	eventually.True(h.t, "a relist", func() bool { return h.eng.pleg.HasRelisted() })
	ctx := context.Background()
	h.eng.housekeeping(ctx)
	if _, ok := h.eng.workers.Get("orphan"); ok || h.rt.count("KillPod") != 0 {
		t.Fatalf("an orphan was stopped before every source reported")
	}
	h.seenAll.Store(true)
	h.eng.housekeeping(ctx)
	eventually.True(h.t, "the orphan removed from the runtime", func() bool { return h.rt.count("RemovePod") == 1 })
	if h.rt.count("KillPod") == 0 {
		t.Errorf("the orphan was removed without being stopped")
	}
	if d := scrapeRegistry(t, r).Sum("kubelet_orphaned_runtime_pods_total", nil) - before; d != 1 {
		t.Errorf("kubelet_orphaned_runtime_pods_total grew by %v, want 1", d)
	}
}

// A pod being deleted is stopped within its grace period, removed from the
// runtime, and only then may its API object go.
func TestDeletedPodIsStoppedThenDeletable(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", "web", "")
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the pod Running", func() bool { return h.phase("u1") == v1.PodRunning })
	if h.eng.CanBeDeleted(p) {
		t.Fatalf("a running pod can be deleted")
	}
	del := p.DeepCopy()
	del.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	del.DeletionGracePeriodSeconds = ptr.To[int64](0)
	h.send(podconfig.DELETE, del)
	eventually.True(h.t, "the pod deletable", func() bool { return h.eng.CanBeDeleted(del) })
	if h.rt.count("KillPod") == 0 || h.rt.count("RemovePod") == 0 {
		t.Errorf("kill=%d remove=%d, want both", h.rt.count("KillPod"), h.rt.count("RemovePod"))
	}
	if info, ok := h.eng.workers.Get("u1"); ok && info.State != podworkers.Terminated {
		t.Errorf("worker state = %v", info.State)
	}
}

func TestReasonCacheKeepsOnlyCurrentReasons(t *testing.T) {
	var r reasonCache
	r.update("u", map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}, "b": {Reason: "ErrImagePull"}})
	// b started this time: its old reason must go; a is untouched.
	r.update("u", map[string]container.WaitingReason{"b": {}})
	got := r.get("u")
	if len(got) != 1 || got["a"].Reason != "CrashLoopBackOff" {
		t.Fatalf("reasons = %v", got)
	}
	got["a"] = container.WaitingReason{}
	if r.get("u")["a"].Reason != "CrashLoopBackOff" {
		t.Fatalf("get returned the cache's own map")
	}
	r.remove("u")
	if len(r.get("u")) != 0 {
		t.Fatalf("remove kept reasons")
	}
}

func TestActiveDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(start)
	core, err := node.New(context.Background(), node.Options{Config: nodestatus.Config{NodeName: "n1"}, Facts: nodestatus.FactsFunc(smallNode)})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Shutdown()
	e := &Engine{clock: clk, core: core}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](30)}}
	st := v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: start}}
	core.Status().SetPodStatus(pod, st)

	tests := []struct {
		name      string
		elapsed   time.Duration
		retry     time.Duration
		exceeded  bool
		wantRetry time.Duration
	}{
		{"well within", 10 * time.Second, 0, false, 20 * time.Second},
		{"back-off ends before the deadline", 10 * time.Second, 5 * time.Second, false, 5 * time.Second},
		{"deadline before the back-off ends", 25 * time.Second, 60 * time.Second, false, 5 * time.Second},
		{"just past", 31 * time.Second, 0, true, time.Millisecond},
	}
	for _, tt := range tests {
		clk.SetTime(start.Add(tt.elapsed))
		reason, _, ok := e.activeDeadlineExceeded(pod, st)
		if ok != tt.exceeded || (ok && reason != "DeadlineExceeded") {
			t.Errorf("%s: exceeded=%v reason=%q", tt.name, ok, reason)
		}
		if got := e.deadlineRetry(pod, tt.retry); got != tt.wantRetry {
			t.Errorf("%s: retry = %v, want %v", tt.name, got, tt.wantRetry)
		}
	}
	// No deadline: the runtime's retry stands; a terminal pod never exceeds.
	noDeadline := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	if got := e.deadlineRetry(noDeadline, 7*time.Second); got != 7*time.Second {
		t.Errorf("retry without deadline = %v", got)
	}
	if _, _, ok := e.activeDeadlineExceeded(pod, v1.PodStatus{Phase: v1.PodSucceeded, StartTime: st.StartTime}); ok {
		t.Errorf("a terminal pod exceeded its deadline")
	}
}

// Regression (issue 23): a pod whose UID is not one clean path element, or
// whose quantities wrap around in cgroup arithmetic, is refused at
// admission with a reason before anything touches a host path or a cgroup.
func TestAdmissionRefusesHostileUIDAndQuantities(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		pod    *v1.Pod
		reason string
	}{
		{pod: apiPod(testPod("../../victim", "escape", "")), reason: "InvalidPodUID"},
		{pod: testPod("huge-cpu", "huge-cpu", "1e18"), reason: "ResourceQuantityTooLarge"},
		{pod: func() *v1.Pod {
			p := testPod("huge-mem", "huge-mem", "")
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1e30")}
			return p
		}(), reason: "ResourceQuantityTooLarge"},
	} {
		h.send(podconfig.ADD, tc.pod)
		uid := tc.pod.UID
		eventually.True(h.t, string(uid)+" Failed", func() bool { return h.phase(uid) == v1.PodFailed })
		st, _ := h.core.Status().GetPodStatus(uid)
		if st.Reason != tc.reason {
			t.Errorf("%s: reason %q, want %q (message %q)", uid, st.Reason, tc.reason, st.Message)
		}
	}
	if n := h.rt.count("SyncPod"); n != 0 {
		t.Errorf("SyncPod calls = %d, want 0: a refused pod reached the runtime", n)
	}
}

// A critical pod that does not fit preempts the pod admission chooses:
// Failed, reason Preempting, with a DisruptionTarget condition, counted
// in kubelet_preemptions; the other pods run on. One no set of pods can
// make room for is rejected.
func TestCriticalPodPreempts(t *testing.T) {
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	preemptions := func() float64 {
		return metricstest.ScrapeRegistry(t, reg).Sum("kubelet_preemptions", map[string]string{"preemption_signal": "cpu"})
	}
	before := preemptions()
	h := newHarness(t)
	h.send(podconfig.ADD, apiPod(testPod("small", "small", "300m")), apiPod(testPod("big", "big", "1500m")))
	eventually.True(h.t, "both pods Running", func() bool { return h.phase("small") == v1.PodRunning && h.phase("big") == v1.PodRunning })

	h.send(podconfig.ADD, testPod("crit", "crit", "1")) // static: critical
	eventually.True(h.t, "the critical pod Running and the big pod Failed", func() bool {
		return h.phase("crit") == v1.PodRunning && h.phase("big") == v1.PodFailed
	})
	st, _ := h.core.Status().GetPodStatus("big")
	if st.Reason != "Preempting" || st.Message != "Preempted in order to admit critical pod" {
		t.Errorf("preempted pod's status: %q %q", st.Reason, st.Message)
	}
	if c := podspec.FindCondition(st.Conditions, v1.DisruptionTarget); c == nil || c.Status != v1.ConditionTrue ||
		c.Reason != v1.PodReasonTerminationByKubelet || c.Message != "Pod was preempted by Kubelet to accommodate a critical pod." {
		t.Errorf("preempted pod's DisruptionTarget condition: %+v", c)
	}
	if h.phase("small") != v1.PodRunning {
		t.Errorf("the small pod was stopped too: %s", h.phase("small"))
	}
	if d := preemptions() - before; d != 1 {
		t.Errorf("kubelet_preemptions{cpu} grew by %v, want 1", d)
	}

	// Even stopping the small pod would not make room (the critical pod
	// cannot be preempted): rejected, and nothing is stopped.
	h.send(podconfig.ADD, testPod("crit2", "crit2", "1500m"))
	eventually.True(h.t, "the second critical pod Failed", func() bool { return h.phase("crit2") == v1.PodFailed })
	st, _ = h.core.Status().GetPodStatus("crit2")
	if st.Reason != "UnexpectedAdmissionError" || !strings.Contains(st.Message, "no set of running pods found to reclaim resources: [cpu: ") {
		t.Errorf("unplaceable critical pod: %q %q", st.Reason, st.Message)
	}
	if h.phase("crit") != v1.PodRunning || h.phase("small") != v1.PodRunning {
		t.Errorf("the running pods were disturbed: crit %s, small %s", h.phase("crit"), h.phase("small"))
	}
	if d := preemptions() - before; d != 1 {
		t.Errorf("kubelet_preemptions{cpu} grew by %v in all, want 1", d)
	}
}

// Concurrent resizes, and a new pod's admission beside them, never
// allocate more than the node has: each decision sees the others'
// allocations (one allocation lock, as upstream). Eight pods of 200m on
// 2 CPUs resize to 400m at once while a ninth pod of 300m arrives; 400m
// is free, so at most two resizes fit, or one and the new pod.
func TestConcurrentResizesNeverOvercommit(t *testing.T) {
	for round := range 10 {
		h := newHarness(t)
		var pods []*v1.Pod
		for i := range 8 {
			pods = append(pods, apiPod(testPod(fmt.Sprintf("p%d-%d", round, i), fmt.Sprintf("p%d", i), "200m")))
		}
		h.send(podconfig.ADD, pods...)
		eventually.True(h.t, "all pods Running", func() bool {
			for _, p := range pods {
				if h.phase(p.UID) != v1.PodRunning {
					return false
				}
			}
			return true
		})
		var resized []*v1.Pod
		for _, p := range pods {
			r := p.DeepCopy()
			r.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("400m")
			resized = append(resized, r)
		}
		late := apiPod(testPod(fmt.Sprintf("late-%d", round), "late", "300m"))
		h.send(podconfig.UPDATE, resized...)
		h.send(podconfig.ADD, late)
		// Every resize decided (allocated or pending) and the late pod
		// admitted or rejected.
		decided := func() (milli int64, done bool) {
			for _, p := range pods {
				st, _ := h.core.Status().GetPodStatus(p.UID)
				if len(st.ContainerStatuses) == 0 {
					return 0, false
				}
				q := st.ContainerStatuses[0].AllocatedResources[v1.ResourceCPU]
				if q.MilliValue() == 200 && podspec.FindCondition(st.Conditions, v1.PodResizePending) == nil {
					return 0, false
				}
				milli += q.MilliValue()
			}
			switch h.phase(late.UID) {
			case v1.PodRunning:
				milli += 300
			case v1.PodFailed:
			default:
				return 0, false
			}
			return milli, true
		}
		eventually.True(h.t, "every resize and the late pod decided", func() bool { _, ok := decided(); return ok })
		if milli, _ := decided(); milli > 2000 {
			t.Fatalf("round %d: %dm of cpu allocated on a node of 2000m", round, milli)
		}
	}
}
