package statuswriter

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

var podsGVR = v1.SchemeGroupVersion.WithResource("pods")

// fakeResolver serves targets from the fake client's tracker (an informer
// without lag) and records nothing as API calls.
type fakeResolver struct {
	client *fake.Clientset

	mu         sync.Mutex
	targets    map[types.UID]types.NamespacedName // kubelet UID -> API object
	mirror     map[types.UID]bool
	terminated map[types.UID]bool
	deletable  map[types.UID]bool
}

func newFakeResolver(c *fake.Clientset) *fakeResolver {
	return &fakeResolver{client: c, targets: map[types.UID]types.NamespacedName{}, mirror: map[types.UID]bool{},
		terminated: map[types.UID]bool{}, deletable: map[types.UID]bool{}}
}

func (r *fakeResolver) StatusTarget(uid types.UID) (Target, bool) {
	r.mu.Lock()
	nn, ok := r.targets[uid]
	mirror := r.mirror[uid]
	r.mu.Unlock()
	if !ok {
		return Target{}, false
	}
	obj, err := r.client.Tracker().Get(podsGVR, nn.Namespace, nn.Name)
	if err != nil {
		return Target{}, false
	}
	return Target{Pod: obj.(*v1.Pod), Mirror: mirror}, true
}

func (r *fakeResolver) PodTerminated(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.terminated[uid]
	return !ok || v
}

func (r *fakeResolver) CanBeDeleted(pod *v1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deletable[pod.UID]
}

func (r *fakeResolver) set(f func(r *fakeResolver)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func actionsOf(c *fake.Clientset, verb string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range c.Actions() {
		if a.GetVerb() == verb {
			out = append(out, a)
		}
	}
	return out
}

// drain does the manager's queued work on the test's goroutine, as one of
// its workers would, until nothing is queued and no failed write waits to be
// retried. What the manager wrongly would do, it has then done: a test's
// "nothing more was written" holds without waiting on a clock. A pod still
// retrying after maxSyncs writes (at most RetryMax, 5ms, apart) fails the
// test.
func drain(t *testing.T, m *Manager) {
	t.Helper()
	const maxSyncs = 50
	ctx := context.Background()
	for range maxSyncs {
		if m.queue.Len() == 0 && !retrying(m) {
			return
		}
		// A retry waits out its back-off (RetryBase) before Get returns it.
		m.processNext(ctx)
	}
	t.Fatalf("the status writer still has work after %d syncs", maxSyncs)
}

// retrying reports whether a known pod's failed write was queued again
// with back-off (the rate limiter forgets a pod once its write succeeds).
func retrying(m *Manager) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.pods {
		if m.queue.NumRequeues(uid) > 0 {
			return true
		}
	}
	return false
}

// holds drains the manager and fails the test unless cond then holds.
func holds(t *testing.T, m *Manager, what string, cond func() bool) {
	t.Helper()
	drain(t, m)
	if !cond() {
		t.Fatalf("the queued work is done, but no %s", what)
	}
}

func setup(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *fakeResolver, *Manager) {
	c := fake.NewSimpleClientset(objs...)
	r := newFakeResolver(c)
	m := NewManager(Options{Client: c, Resolver: r, Now: clockAt(&t0), Workers: 2, ReconcilePeriod: time.Hour, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	return c, r, m
}

func patchOf(t *testing.T, a k8stesting.Action) map[string]any {
	t.Helper()
	p := a.(k8stesting.PatchAction)
	if p.GetSubresource() != "status" || p.GetPatchType() != types.StrategicMergePatchType {
		t.Errorf("patch %s/%s", p.GetSubresource(), p.GetPatchType())
	}
	var out map[string]any
	if err := json.Unmarshal(p.GetPatch(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCoalescesToOnePatchWithLatestStatusAndUID(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })

	for i := range 20 {
		st := statusOf(v1.PodRunning, v1.ConditionFalse)
		st.Message = strings.Repeat("x", i+1)
		m.SetPodStatus(pod, st)
	}
	holds(t, m, "a patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	patches := actionsOf(c, "patch")
	if len(patches) != 1 {
		t.Fatalf("%d patches, want 1", len(patches))
	}
	p := patchOf(t, patches[0])
	if uid := p["metadata"].(map[string]any)["uid"]; uid != "u1" {
		t.Errorf("patch lacks the uid precondition: %v", p)
	}
	if msg := p["status"].(map[string]any)["message"]; msg != strings.Repeat("x", 20) {
		t.Errorf("patch does not carry the latest status: %v", msg)
	}
	got, _ := c.Tracker().Get(podsGVR, "ns", "p")
	if got.(*v1.Pod).Status.Phase != v1.PodRunning {
		t.Errorf("API phase %s", got.(*v1.Pod).Status.Phase)
	}

	// An unchanged status writes nothing; a change writes promptly.
	m.SetPodStatus(pod, func() v1.PodStatus {
		s := statusOf(v1.PodRunning, v1.ConditionFalse)
		s.Message = strings.Repeat("x", 20)
		return s
	}())
	drain(t, m)
	if n := len(actionsOf(c, "patch")); n != 1 {
		t.Errorf("unchanged status patched: %d", n)
	}
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	holds(t, m, "second patch", func() bool { return len(actionsOf(c, "patch")) == 2 })
}

func TestMirrorPodTarget(t *testing.T) {
	static := testPod("static-uid", "web-node1", v1.RestartPolicyAlways)
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	mirror := testPod("mirror-uid", "web-node1", v1.RestartPolicyAlways)
	c, r, m := setup(t, mirror)

	// No mirror pod known yet: nothing is written.
	m.SetPodStatus(static, statusOf(v1.PodRunning, v1.ConditionTrue))
	drain(t, m)
	if n := len(actionsOf(c, "patch")); n != 0 {
		t.Fatalf("wrote without a mirror pod: %d", n)
	}
	// The mirror appears; the next change (or a reconcile) writes to it.
	r.set(func(r *fakeResolver) {
		r.targets["static-uid"] = types.NamespacedName{Namespace: "ns", Name: "web-node1"}
		r.mirror["static-uid"] = true
	})
	m.Reconcile()
	holds(t, m, "mirror patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	p := patchOf(t, actionsOf(c, "patch")[0])
	if uid := p["metadata"].(map[string]any)["uid"]; uid != "mirror-uid" {
		t.Errorf("patch must carry the mirror pod's uid, got %v", uid)
	}
}

func TestFinalDeleteOnlyWhenAllowedAndOnce(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	now := metav1.NewTime(t0)
	pod.DeletionTimestamp = &now
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) {
		r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"}
		r.terminated["u1"] = false
	})

	// Still terminating: the terminal phase is held back, no delete.
	m.SetPodStatus(pod, statusOf(v1.PodFailed, v1.ConditionFalse))
	holds(t, m, "patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	if ph := patchOf(t, actionsOf(c, "patch")[0])["status"].(map[string]any)["phase"]; ph == "Failed" {
		t.Errorf("terminal phase written before the pod finished terminating")
	}
	if n := len(actionsOf(c, "delete")); n != 0 {
		t.Fatalf("deleted too early: %d", n)
	}

	// Terminated: the phase is written, but containers are not gone yet.
	r.set(func(r *fakeResolver) { r.terminated["u1"] = true })
	m.Sync("u1")
	holds(t, m, "terminal patch", func() bool {
		got, _ := c.Tracker().Get(podsGVR, "ns", "p")
		return got.(*v1.Pod).Status.Phase == v1.PodFailed
	})
	if n := len(actionsOf(c, "delete")); n != 0 {
		t.Fatalf("deleted before CanBeDeleted: %d", n)
	}

	// Cleaned up: one delete, grace 0, UID precondition.
	r.set(func(r *fakeResolver) { r.deletable["u1"] = true })
	m.Sync("u1")
	holds(t, m, "delete", func() bool { return len(actionsOf(c, "delete")) == 1 })
	d := actionsOf(c, "delete")[0].(k8stesting.DeleteAction).GetDeleteOptions()
	if d.GracePeriodSeconds == nil || *d.GracePeriodSeconds != 0 || d.Preconditions == nil || d.Preconditions.UID == nil || *d.Preconditions.UID != "u1" {
		t.Errorf("delete options %+v", d)
	}
	m.Sync("u1")
	m.SetPodStatus(pod, statusOf(v1.PodFailed, v1.ConditionFalse))
	drain(t, m)
	if n := len(actionsOf(c, "delete")); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

func TestMirrorPodNeverDeleted(t *testing.T) {
	static := testPod("static-uid", "web-node1", v1.RestartPolicyNever)
	mirror := testPod("mirror-uid", "web-node1", v1.RestartPolicyNever)
	now := metav1.NewTime(t0)
	mirror.DeletionTimestamp = &now
	c, r, m := setup(t, mirror)
	r.set(func(r *fakeResolver) {
		r.targets["static-uid"] = types.NamespacedName{Namespace: "ns", Name: "web-node1"}
		r.mirror["static-uid"] = true
		r.deletable["static-uid"] = true
	})
	m.SetPodStatus(static, statusOf(v1.PodSucceeded, v1.ConditionFalse))
	holds(t, m, "patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	if n := len(actionsOf(c, "delete")); n != 0 {
		t.Errorf("mirror pod deleted")
	}
}

func TestNotFoundDropsAndConflictRetries(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })

	var mu sync.Mutex
	mode := "notfound"
	c.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		switch mode {
		case "notfound":
			return true, nil, apierrors.NewNotFound(podsGVR.GroupResource(), "p")
		case "conflict":
			mode = "ok"
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), "p", nil)
		}
		return false, nil, nil
	})

	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	holds(t, m, "patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	if n := len(actionsOf(c, "patch")); n != 1 {
		t.Fatalf("NotFound retried: %d patches", n)
	}

	mu.Lock()
	mode = "conflict"
	mu.Unlock()
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	holds(t, m, "retry after conflict", func() bool {
		got, _ := c.Tracker().Get(podsGVR, "ns", "p")
		return got.(*v1.Pod).Status.Phase == v1.PodRunning
	})
}

func TestConflictFromRecreatedPodIsDropped(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })
	c.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), "p", nil)
	})
	// The API now holds another pod of the same name.
	c.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, testPod("u2", "p", v1.RestartPolicyAlways), nil
	})
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionFalse))
	holds(t, m, "patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	if n := len(actionsOf(c, "patch")); n != 1 {
		t.Errorf("kept writing a re-created pod: %d patches", n)
	}
}

// The reconcile remembers what it found in sync (the API object's
// resourceVersion, our status's generation) and compares again as soon as
// either moves: a foreign write is repaired after any number of in-sync
// passes.
func TestReconcileRepairsAPIStatus(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	pod.ResourceVersion = "1"
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })
	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	holds(t, m, "patch", func() bool { return len(actionsOf(c, "patch")) == 1 })

	// In sync: reconciles write nothing.
	for range 3 {
		m.Reconcile()
		drain(t, m)
	}
	if n := len(actionsOf(c, "patch")); n != 1 {
		t.Fatalf("reconcile of an in-sync pod patched: %d", n)
	}

	// Someone else overwrites the status; a foreign condition is left alone.
	obj, _ := c.Tracker().Get(podsGVR, "ns", "p")
	changed := obj.(*v1.Pod).DeepCopy()
	changed.ResourceVersion = "7"
	changed.Status.Phase = v1.PodPending
	changed.Status.Conditions = append(changed.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
	if err := c.Tracker().Update(podsGVR, changed, "ns"); err != nil {
		t.Fatal(err)
	}
	m.Reconcile()
	holds(t, m, "repair", func() bool {
		got, _ := c.Tracker().Get(podsGVR, "ns", "p")
		return got.(*v1.Pod).Status.Phase == v1.PodRunning
	})
	got, _ := c.Tracker().Get(podsGVR, "ns", "p")
	if podspec.FindCondition(got.(*v1.Pod).Status.Conditions, "example.com/gate") == nil {
		t.Errorf("foreign condition removed: %+v", got.(*v1.Pod).Status.Conditions)
	}
}

// The resize conditions are the kubelet's: ours replace the API's (a
// PodResizePending the kubelet sets reaches the API, one it cleared goes),
// while a condition someone else owns is carried over.
func TestForAPIWritesResizeConditions(t *testing.T) {
	api := &v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue},
		{Type: "example.com/gate", Status: v1.ConditionTrue},
	}}
	ours := &v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},
		{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible},
	}}
	out := forAPI(api, ours, false)
	got := map[v1.PodConditionType]bool{}
	for _, c := range out.Conditions {
		got[c.Type] = true
	}
	want := map[v1.PodConditionType]bool{v1.PodReady: true, v1.PodResizePending: true, "example.com/gate": true}
	if len(got) != len(want) {
		t.Fatalf("conditions %v, want %v", out.Conditions, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("condition %s missing from %v", k, out.Conditions)
		}
	}
}

// Start runs the workers that do the queued writes and returns once its
// context ends.
func TestStartWritesAndStops(t *testing.T) {
	pod := testPod("u1", "p", v1.RestartPolicyAlways)
	c, r, m := setup(t, pod)
	r.set(func(r *fakeResolver) { r.targets["u1"] = types.NamespacedName{Namespace: "ns", Name: "p"} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()

	m.SetPodStatus(pod, statusOf(v1.PodRunning, v1.ConditionTrue))
	eventually.True(t, "a worker's patch", func() bool { return len(actionsOf(c, "patch")) == 1 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(eventually.Limit):
		t.Fatal("Start did not return after its context ended")
	}
}
