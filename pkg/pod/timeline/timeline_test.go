package timeline

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d float64) time.Time { return t0.Add(time.Duration(d * float64(time.Second))) }

func TestPhases(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Milestones
		want map[string]float64
	}{
		{"nothing yet", Milestones{Seen: at(0)}, map[string]float64{}},
		{"admitted", Milestones{Seen: at(0), Admitted: at(0.2)}, map[string]float64{PhaseAdmission: 0.2}},
		{"sandbox ready", Milestones{Seen: at(0), Admitted: at(0.2), SandboxReady: at(1)}, map[string]float64{PhaseAdmission: 0.2, PhaseSandbox: 0.8}},
		{"running without pulls", Milestones{Seen: at(0), Admitted: at(0.2), SandboxReady: at(1), Running: at(1.5)},
			map[string]float64{PhaseAdmission: 0.2, PhaseSandbox: 0.8, PhaseImagePull: 0, PhaseContainers: 0.5}},
		{"overlapping pulls count once", Milestones{Seen: at(0), Admitted: at(0), SandboxReady: at(1), Running: at(6),
			Pulls: [][2]time.Time{{at(1), at(3)}, {at(2), at(4)}, {at(4.5), at(5)}}},
			map[string]float64{PhaseAdmission: 0, PhaseSandbox: 1, PhaseImagePull: 3.5, PhaseContainers: 1.5}},
		{"a pull after Running is cut", Milestones{Seen: at(0), Admitted: at(0), SandboxReady: at(0), Running: at(2),
			Pulls: [][2]time.Time{{at(1), at(9)}}},
			map[string]float64{PhaseAdmission: 0, PhaseSandbox: 0, PhaseImagePull: 1, PhaseContainers: 1}},
		{"ready and observed", Milestones{Seen: at(0), Admitted: at(0), SandboxReady: at(0), Running: at(1), Ready: at(3), ObservedRunning: at(1.25)},
			map[string]float64{PhaseAdmission: 0, PhaseSandbox: 0, PhaseImagePull: 0, PhaseContainers: 1, PhaseReadiness: 2, PhaseAPIReport: 0.25}},
	} {
		got := Phases(tc.m)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if d, ok := got[k]; !ok || d.Seconds() != v {
				t.Errorf("%s: %s = %v, want %vs", tc.name, k, d, v)
			}
		}
	}
}

// registry creates the package's metrics (unregistered ones do nothing).
var registry = metrics.NewKubeletRegistry(metrics.KubeletOptions{})

// hist is a histogram's sample count and sum, scraped from registry.
func hist(t *testing.T, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	f, err := metricstest.ScrapeHandler(compbase.HandlerFor(registry, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	var s float64
	for _, m := range f.Find(name, labels) {
		n += m.GetHistogram().GetSampleCount()
		s += m.GetHistogram().GetSampleSum()
	}
	return n, s
}

func phase(p string) map[string]string { return map[string]string{"phase": p} }

func apiPod(uid types.UID, name string, seen time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid, CreationTimestamp: metav1.NewTime(at(-2)),
			Annotations: map[string]string{podspec.ConfigSeenAnnotation: seen.Format(time.RFC3339Nano), podspec.ConfigSourceAnnotation: podspec.SourceAPI}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
	}
}

func runningStatus(ready bool) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "app",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1.8))}}}}}
	c := v1.ConditionFalse
	if ready {
		c = v1.ConditionTrue
	}
	st.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: c}}
	return st
}

// TestTrackerStart follows one API pod through its start and checks the
// timeline served and the metrics observed.
func TestTrackerStart(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	tr := New(clk)
	pod := apiPod("u1", "web", t0)
	sliN, sliSum := hist(t, "kubelet_pod_start_sli_duration_seconds", nil)
	totN, totSum := hist(t, "kubelet_pod_start_total_duration_seconds", nil)
	startN, _ := hist(t, "kubelet_pod_start_duration_seconds", nil)
	pullN, pullSum := hist(t, "kubelet_pod_startup_phase_duration_seconds", phase(PhaseImagePull))
	ctrN, ctrSum := hist(t, "kubelet_pod_startup_phase_duration_seconds", phase(PhaseContainers))
	rdyN, rdySum := hist(t, "kubelet_pod_startup_phase_duration_seconds", phase(PhaseReadiness))

	tr.ObservePods([]*v1.Pod{pod})
	tr.WorkerStarted(pod, at(0.1))
	tr.SandboxStarted("u1", at(0.1), at(0.6), nil)
	tr.ImagePulled("u1", "example.com/app:1", at(0.6), at(1.6), nil)
	tr.ContainerCreated("u1", "app", at(1.6), at(1.7), nil)
	tr.ContainerStarted("u1", "app", at(1.7), at(1.8), nil)
	// Events of another pod's UID change nothing here.
	tr.ContainerStarted("other", "app", at(1.7), at(1.8), nil)

	clk.SetTime(at(2))
	tr.StatusComputed(pod, runningStatus(false))
	clk.SetTime(at(3))
	tr.StatusComputed(pod, runningStatus(true))
	// The API's copy still shows the pod pending: not yet observed.
	tr.ObservePods([]*v1.Pod{pod})
	clk.SetTime(at(3.5))
	seenRunning := pod.DeepCopy()
	seenRunning.Status = runningStatus(true)
	tr.ObservePods([]*v1.Pod{seenRunning})
	// Later updates change nothing.
	clk.SetTime(at(9))
	tr.ObservePods([]*v1.Pod{seenRunning})
	tr.StatusComputed(pod, runningStatus(true))

	tl, ok := tr.Get("ns", "web")
	if !ok || tl.Adopted || !tl.Complete || tl.UID != "u1" {
		t.Fatalf("timeline = %+v", tl)
	}
	var types []EventType
	for _, e := range tl.Events {
		types = append(types, e.Type)
	}
	want := []EventType{Seen, WorkerStarted, SandboxReady, ImagePulled, ContainerCreated, ContainerStarted, PhaseRunning, Running, Ready, ObservedRunning}
	if len(types) != len(want) {
		t.Fatalf("events = %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("events = %v, want %v", types, want)
		}
	}
	wantPhases := map[string]float64{PhaseAdmission: 0.1, PhaseSandbox: 0.5, PhaseImagePull: 1, PhaseContainers: 0.4, PhaseReadiness: 1, PhaseAPIReport: 1.5}
	for k, v := range wantPhases {
		if d := tl.PhasesSeconds[k]; d < v-1e-9 || d > v+1e-9 {
			t.Errorf("phase %s = %v, want %v", k, d, v)
		}
	}
	if tl.TotalSeconds != 3 {
		t.Errorf("total = %v, want 3 (seen to ready)", tl.TotalSeconds)
	}

	// SLI: creation (t-2) to observed running (t+3.5), less 1s of pulling.
	check := func(name string, m string, labels map[string]string, n0 uint64, s0, want float64) {
		t.Helper()
		n, s := hist(t, m, labels)
		if n != n0+1 || s-s0 < want-1e-6 || s-s0 > want+1e-6 {
			t.Errorf("%s: count %d->%d, sum grew %v, want one observation of %v", name, n0, n, s-s0, want)
		}
	}
	check("sli", "kubelet_pod_start_sli_duration_seconds", nil, sliN, sliSum, 4.5)
	check("total", "kubelet_pod_start_total_duration_seconds", nil, totN, totSum, 5.5)
	check("image_pull", "kubelet_pod_startup_phase_duration_seconds", phase(PhaseImagePull), pullN, pullSum, 1)
	check("containers", "kubelet_pod_startup_phase_duration_seconds", phase(PhaseContainers), ctrN, ctrSum, 0.4)
	check("readiness", "kubelet_pod_startup_phase_duration_seconds", phase(PhaseReadiness), rdyN, rdySum, 1)
	if n, _ := hist(t, "kubelet_pod_start_duration_seconds", nil); n != startN+1 {
		t.Errorf("pod_start_duration observed %d times", n-startN)
	}

	// Served over HTTP.
	h := tr.Handler("/stats/timeline")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats/timeline/ns/web", nil))
	var got Timeline
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Name != "web" || len(got.Events) != len(want) {
		t.Errorf("GET one: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats/timeline", nil))
	var all []Timeline
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &all) != nil || len(all) != 1 {
		t.Errorf("GET all: %d %s", rec.Code, rec.Body)
	}
	for _, u := range []string{"/stats/timeline/ns/nope", "/stats/timeline/ns", "/stats/timeline/a/b/c"} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d", u, rec.Code)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/stats/timeline", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}

	tr.Forget("u1")
	if _, ok := tr.Get("ns", "web"); ok {
		t.Errorf("forgotten pod still served")
	}
}

// TestTrackerAdopted: pods already started when the kubelet took them up
// get a timeline marked adopted and feed no metric.
func TestTrackerAdopted(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	tr := New(clk)
	n0, _ := hist(t, "kubelet_pod_startup_phase_duration_seconds", phase(PhaseContainers))
	s0, _ := hist(t, "kubelet_pod_start_sli_duration_seconds", nil)

	started := apiPod("u2", "old", t0)
	started.Status.StartTime = &metav1.Time{Time: at(-100)}
	tr.ObservePods([]*v1.Pod{started})
	// Running with no sandbox created by this kubelet: adopted too.
	static := apiPod("u3", "static", t0)
	static.Annotations[podspec.ConfigSourceAnnotation] = podspec.SourceFile
	tr.WorkerStarted(static, at(0.1))
	clk.SetTime(at(1))
	for _, p := range []*v1.Pod{started, static} {
		tr.StatusComputed(p, runningStatus(true))
		seen := p.DeepCopy()
		seen.Status = runningStatus(true)
		tr.ObservePods([]*v1.Pod{seen})
	}
	for _, name := range []string{"old", "static"} {
		if tl, ok := tr.Get("ns", name); !ok || !tl.Adopted {
			t.Errorf("%s: %+v", name, tl)
		}
	}
	if n, _ := hist(t, "kubelet_pod_startup_phase_duration_seconds", phase(PhaseContainers)); n != n0 {
		t.Errorf("adopted pods fed the phase histogram")
	}
	if n, _ := hist(t, "kubelet_pod_start_sli_duration_seconds", nil); n != s0 {
		t.Errorf("adopted pods fed the SLI")
	}
	// Mirror and finished pods get no timeline.
	mirror := apiPod("u4", "m", t0)
	mirror.Annotations[podspec.ConfigMirrorAnnotation] = "x"
	done := apiPod("u5", "d", t0)
	done.Status.Phase = v1.PodSucceeded
	tr.ObservePods([]*v1.Pod{mirror, done})
	if len(tr.List()) != 2 {
		t.Errorf("timelines: %+v", tr.List())
	}
	tr.Prune(func(uid types.UID) bool { return uid == "u2" })
	if l := tr.List(); len(l) != 1 || l[0].UID != "u2" {
		t.Errorf("after prune: %+v", l)
	}
}

func TestTrackerFailuresAndCap(t *testing.T) {
	tr := New(testingclock.NewFakeClock(t0))
	pod := apiPod("u6", "bad", t0)
	tr.ObservePods([]*v1.Pod{pod})
	tr.SandboxStarted("u6", at(0), at(1), errors.New("cni failed"))
	for i := 0; i < 2*maxEvents; i++ {
		tr.ImagePulled("u6", "nope:1", at(1), at(2), errors.New("not found"))
	}
	tl, _ := tr.Get("ns", "bad")
	if len(tl.Events) != maxEvents || tl.Events[1].Type != SandboxFailed || tl.Events[1].Error != "cni failed" || tl.Events[2].Type != ImagePullFailed {
		t.Errorf("events: %d %+v", len(tl.Events), tl.Events[:3])
	}
	if _, ok := tl.PhasesSeconds[PhaseSandbox]; ok {
		t.Errorf("a failed sandbox is not a ready sandbox")
	}
}

type fakeHandler struct{ err error }

func (f *fakeHandler) SyncPod(context.Context, *v1.Pod) (bool, time.Duration, error) {
	return false, 0, f.err
}
func (f *fakeHandler) SyncTerminatingPod(context.Context, *v1.Pod, *container.RunningPod, *int64, func(*v1.PodStatus)) error {
	return f.err
}
func (f *fakeHandler) SyncTerminatedPod(context.Context, types.UID, *v1.Pod, bool) error {
	return f.err
}

func TestInstrumentHandler(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	tr := New(clk)
	h := tr.InstrumentHandler(&fakeHandler{})
	count := func(op string) uint64 {
		n, _ := hist(t, "kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": op})
		return n
	}
	restarted := func(static string) float64 {
		v, _ := testutil.GetCounterMetricValue(metrics.RestartedPodTotal.WithLabelValues(static))
		return v
	}
	c0, s0, k0, d0, r0 := count(OpCreate), count(OpSync), count(OpKill), count(OpTerminated), restarted("true")
	pod := apiPod("u7", "s", t0)
	pod.Annotations[podspec.ConfigSourceAnnotation] = podspec.SourceFile
	ctx := context.Background()
	h.SyncPod(ctx, pod)
	h.SyncPod(ctx, pod)
	h.SyncTerminatingPod(ctx, pod, nil, nil, nil)
	if _, ok := tr.Get("ns", "s"); !ok {
		t.Fatalf("the first sync starts a timeline")
	}
	h.SyncTerminatedPod(ctx, pod.UID, pod, true)
	if _, ok := tr.Get("ns", "s"); ok {
		t.Errorf("a removed pod's timeline is dropped")
	}
	// The same static pod put back: a restart under the same UID.
	h.SyncPod(ctx, pod)
	if count(OpCreate)-c0 != 2 || count(OpSync)-s0 != 1 || count(OpKill)-k0 != 1 || count(OpTerminated)-d0 != 1 {
		t.Errorf("worker durations: create %d sync %d kill %d terminated %d", count(OpCreate)-c0, count(OpSync)-s0, count(OpKill)-k0, count(OpTerminated)-d0)
	}
	if restarted("true")-r0 != 1 {
		t.Errorf("restarted_pods_total{static=true} grew by %v", restarted("true")-r0)
	}
}

// A config update starts a pod's timeline; its removal forgets it.
func TestTrackerPodUpdate(t *testing.T) {
	tr := New(testingclock.NewFakeClock(t0))
	pod := apiPod("u1", "web", t0)
	tr.PodUpdate(podconfig.PodUpdate{Op: podconfig.ADD, Pods: []*v1.Pod{pod}})
	if _, ok := tr.Get("ns", "web"); !ok {
		t.Fatal("no timeline after ADD")
	}
	tr.PodUpdate(podconfig.PodUpdate{Op: podconfig.REMOVE, Pods: []*v1.Pod{pod}})
	if _, ok := tr.Get("ns", "web"); ok {
		t.Error("timeline kept after REMOVE")
	}
}
