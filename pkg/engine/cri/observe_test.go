package cri

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

// recorder is an Observer that remembers what it was told.
type recorder struct {
	mu      sync.Mutex
	updates []podconfig.Op
	phases  map[types.UID]v1.PodPhase
	syncs   int
	pruned  int
}

func (r *recorder) InstrumentHandler(h podworkers.Handler) podworkers.Handler {
	return countingHandler{Handler: h, r: r}
}

type countingHandler struct {
	podworkers.Handler
	r *recorder
}

func (c countingHandler) SyncPod(ctx context.Context, pod *v1.Pod) (bool, time.Duration, error) {
	c.r.mu.Lock()
	c.r.syncs++
	c.r.mu.Unlock()
	return c.Handler.SyncPod(ctx, pod)
}

func (r *recorder) PodUpdate(u podconfig.PodUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u.Op)
}

func (r *recorder) StatusComputed(pod *v1.Pod, st v1.PodStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases[pod.UID] = st.Phase
}

func (r *recorder) Prune(func(types.UID) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruned++
}

func (r *recorder) seen(uid types.UID) (v1.PodPhase, int, []podconfig.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phases[uid], r.syncs, append([]podconfig.Op(nil), r.updates...)
}

// The observer sees the pod updates, the worker steps and every status;
// the pod counts follow admission and the pod's end.
func TestObserverAndPodCounts(t *testing.T) {
	rec := &recorder{phases: map[types.UID]v1.PodPhase{}}
	h := newObservedHarness(t, rec)
	p := testPod("u1", "web", "")
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the observer told the pod is Running", func() bool {
		phase, syncs, _ := rec.seen("u1")
		return phase == v1.PodRunning && syncs > 0
	})
	if _, _, ops := rec.seen("u1"); len(ops) == 0 || ops[0] != podconfig.ADD {
		t.Errorf("updates seen = %v", ops)
	}
	n := h.eng.PodCounts()
	if n.Desired != [2]int{0, 1} || n.Active != [2]int{0, 1} || n.Mirror != 0 {
		t.Errorf("counts with a running static pod = %+v", n)
	}
	syncing := metrics.WorkingPod{Lifecycle: metrics.WorkingSync, Config: metrics.WorkingDesired, Static: "true"}
	if len(n.Working) != 1 || n.Working[syncing] != 1 {
		t.Errorf("working pods with a running static pod = %v, want 1 of %+v", n.Working, syncing)
	}
	if len(h.eng.RuntimePods()) == 0 {
		t.Error("the runtime's pods are not shown (kubelet_running_pods)")
	}
	if n.Ephemeral != 0 {
		t.Errorf("ephemeral containers = %d, want 0", n.Ephemeral)
	}
	debug := p.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}
	h.send(podconfig.UPDATE, debug)
	eventually.True(h.t, "the ephemeral container counted", func() bool { return h.eng.PodCounts().Ephemeral == 1 })
	h.send(podconfig.REMOVE, p)
	eventually.True(h.t, "the pod gone from the counts", func() bool {
		n := h.eng.PodCounts()
		return n.Desired == [2]int{} && n.Active == [2]int{} && len(n.Working) == 0
	})
}

// Each pod worker is one kubelet_working_pods series, as upstream labels
// them.
func TestWorkingPod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w       podworkers.PodInfo
		desired bool
		want    metrics.WorkingPod
	}{
		{"desired pod, syncing", podworkers.PodInfo{State: podworkers.Syncing, HasSpec: true}, true,
			metrics.WorkingPod{Lifecycle: "sync", Config: "desired", Static: ""}},
		{"desired static pod, syncing", podworkers.PodInfo{State: podworkers.Syncing, HasSpec: true, Static: true}, true,
			metrics.WorkingPod{Lifecycle: "sync", Config: "desired", Static: "true"}},
		{"desired pod, terminating (evicted, deadline)", podworkers.PodInfo{State: podworkers.Terminating, HasSpec: true}, true,
			metrics.WorkingPod{Lifecycle: "terminating", Config: "desired", Static: ""}},
		{"desired pod, terminated (phase Succeeded)", podworkers.PodInfo{State: podworkers.Terminated, HasSpec: true}, true,
			metrics.WorkingPod{Lifecycle: "terminated", Config: "desired", Static: ""}},
		{"deleted pod, terminating", podworkers.PodInfo{State: podworkers.Terminating, HasSpec: true, Removed: true}, false,
			metrics.WorkingPod{Lifecycle: "terminating", Config: "orphan", Static: ""}},
		{"removed static pod, terminated", podworkers.PodInfo{State: podworkers.Terminated, HasSpec: true, Static: true, Removed: true}, false,
			metrics.WorkingPod{Lifecycle: "terminated", Config: "orphan", Static: "true"}},
		{"runtime only pod, terminating", podworkers.PodInfo{State: podworkers.Terminating, Removed: true}, false,
			metrics.WorkingPod{Lifecycle: "terminating", Config: "runtime_only", Static: "unknown"}},
	} {
		if got := workingPod(tc.w, tc.desired); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func scrapeRegistry(t *testing.T, r compbase.KubeRegistry) metricstest.Families {
	t.Helper()
	f, err := metricstest.ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The started pods and containers counters follow the steps of a SyncPod
// round, as upstream counts them.
func TestCountStarts(t *testing.T) {
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}, {Name: "side"}}}}
	res := container.SyncResult{Steps: []container.StepResult{
		{Action: container.ActionCreateSandbox},
		{Action: container.ActionCreateSandbox, Err: errors.New("cni")},
		{Action: container.ActionStartInit, Container: "init"},
		{Action: container.ActionStart, Container: "app"},
		{Action: container.ActionPull, Container: "side", Err: errors.New("no"), Reason: images.ReasonErrImagePull},
		// Held back by crash-loop back-off: nothing was tried.
		{Action: container.ActionStart, Container: "app", Err: errors.New("back-off"), Reason: kuberuntime.ReasonCrashLoopBackOff},
		{Action: container.ActionKill, Container: "app"},
	}}
	before := scrapeRegistry(t, r)
	countStarts(pod, res)
	after := scrapeRegistry(t, r)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"kubelet_started_pods_total", nil, 2},
		{"kubelet_started_pods_errors_total", nil, 1},
		{"kubelet_started_containers_total", map[string]string{"container_type": "container"}, 2},
		{"kubelet_started_containers_total", map[string]string{"container_type": "init_container"}, 1},
		{"kubelet_started_containers_errors_total", map[string]string{"container_type": "container", "code": "ErrImagePull"}, 1},
		{"kubelet_started_containers_errors_total", map[string]string{"code": kuberuntime.ReasonCrashLoopBackOff}, 0},
	} {
		if d := after.Sum(tc.name, tc.labels) - before.Sum(tc.name, tc.labels); d != tc.delta {
			t.Errorf("%s%v grew by %v, want %v", tc.name, tc.labels, d, tc.delta)
		}
	}
}

func TestEndedDuring(t *testing.T) {
	st := func(cs ...container.Status) *container.PodStatus { return &container.PodStatus{Containers: cs} }
	run := func(id string) container.Status { return container.Status{ID: id, State: container.StateRunning} }
	exit := func(id string) container.Status { return container.Status{ID: id, State: container.StateExited} }
	for _, tc := range []struct {
		name          string
		before, after *container.PodStatus
		want          bool
	}{
		{"started and running", st(), st(run("a")), false},
		{"started and already done (an init container)", st(), st(exit("a")), true},
		{"killed while synced", st(run("a")), st(exit("a")), true},
		{"exited before, still exited", st(exit("a")), st(exit("a"), run("b")), false},
		{"a new instance exited beside an old one", st(exit("a")), st(exit("a"), exit("b")), true},
		{"nothing read before", nil, st(exit("a")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := endedDuring(tc.before, tc.after); got != tc.want {
				t.Errorf("endedDuring = %v, want %v", got, tc.want)
			}
		})
	}
}
