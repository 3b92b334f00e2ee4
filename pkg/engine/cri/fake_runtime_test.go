package cri

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// fakeRuntime is an in-memory runtime: SyncPod creates a ready sandbox and
// starts every app container (running), KillPod stops them (exit 0),
// RemovePod forgets the pod. Every call is counted by name.
type fakeRuntime struct {
	mu    sync.Mutex
	pods  map[types.UID]*container.PodStatus
	calls map[string]int
	seq   int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pods: map[types.UID]*container.PodStatus{}, calls: map[string]int{}}
}

func (f *fakeRuntime) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeRuntime) Type() string                            { return "fake" }
func (f *fakeRuntime) Version(context.Context) (string, error) { return "0.1", nil }
func (f *fakeRuntime) Status(context.Context) (container.RuntimeStatus, error) {
	return container.RuntimeStatus{RuntimeReady: true, NetworkReady: true}, nil
}

// run puts a pod into the runtime as if an earlier kubelet started it.
func (f *fakeRuntime) run(uid types.UID, ns, name string, containers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	now := time.Now()
	ps := &container.PodStatus{UID: uid, Name: name, Namespace: ns, IPs: []string{"10.0.0.1"},
		Sandboxes: []container.SandboxStatus{{ID: fmt.Sprintf("sb-%d", f.seq), State: container.SandboxReady, CreatedAt: now, IPs: []string{"10.0.0.1"}}}}
	for _, c := range containers {
		ps.Containers = append(ps.Containers, container.Status{ID: fmt.Sprintf("%s-%d", c, f.seq), Name: c, State: container.StateRunning,
			CreatedAt: now, StartedAt: now, SandboxID: ps.Sandboxes[0].ID})
	}
	f.pods[uid] = ps
}

func (f *fakeRuntime) SyncPod(_ context.Context, pod *v1.Pod, _ *container.PodStatus) container.SyncResult {
	f.mu.Lock()
	f.calls["SyncPod"]++
	_, exists := f.pods[pod.UID]
	f.mu.Unlock()
	if exists {
		return container.SyncResult{}
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	f.run(pod.UID, pod.Namespace, pod.Name, names...)
	steps := []container.StepResult{{Action: container.ActionCreateSandbox}}
	for _, n := range names {
		steps = append(steps, container.StepResult{Action: container.ActionStart, Container: n})
	}
	return container.SyncResult{Steps: steps}
}

func (f *fakeRuntime) KillPod(_ context.Context, _ *v1.Pod, running *container.RunningPod, _ *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["KillPod"]++
	ps, ok := f.pods[running.UID]
	if !ok {
		return nil
	}
	now := time.Now()
	for i := range ps.Containers {
		if ps.Containers[i].State == container.StateRunning {
			ps.Containers[i].State, ps.Containers[i].FinishedAt = container.StateExited, now
		}
	}
	for i := range ps.Sandboxes {
		ps.Sandboxes[i].State = container.SandboxNotReady
	}
	return nil
}

func (f *fakeRuntime) RemovePod(_ context.Context, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["RemovePod"]++
	delete(f.pods, uid)
	return nil
}

func (f *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ps, ok := f.pods[uid]; ok {
		return copyStatus(ps), nil
	}
	return &container.PodStatus{UID: uid, Name: name, Namespace: ns, Timestamp: time.Now()}, nil
}

func (f *fakeRuntime) GetPods(_ context.Context, all bool) ([]*container.RunningPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*container.RunningPod
	for _, ps := range f.pods {
		rp := &container.RunningPod{UID: ps.UID, Name: ps.Name, Namespace: ps.Namespace, Sandboxes: ps.Sandboxes}
		for _, c := range ps.Containers {
			if all || c.State == container.StateRunning {
				rp.Containers = append(rp.Containers, c)
			}
		}
		if all || len(rp.Containers) > 0 {
			out = append(out, rp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

func (f *fakeRuntime) Relist(context.Context) ([]*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*container.PodStatus, 0, len(f.pods))
	for _, ps := range f.pods {
		out = append(out, copyStatus(ps))
	}
	return out, nil
}

func copyStatus(ps *container.PodStatus) *container.PodStatus {
	c := *ps
	c.Sandboxes = append([]container.SandboxStatus(nil), ps.Sandboxes...)
	c.Containers = append([]container.Status(nil), ps.Containers...)
	c.Timestamp = time.Now()
	return &c
}
