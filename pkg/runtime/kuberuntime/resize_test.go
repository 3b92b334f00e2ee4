package kuberuntime

import (
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

type fakeActuated struct {
	mu sync.Mutex
	m  map[string]v1.ResourceRequirements
}

func (f *fakeActuated) Actuated(_ types.UID, name string) (v1.ResourceRequirements, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.m[name]
	return r, ok
}

func (f *fakeActuated) SetActuated(_ types.UID, name string, r v1.ResourceRequirements) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[name] = *r.DeepCopy()
	return nil
}

func TestComputeResize(t *testing.T) {
	pod := testPod()
	st := &container.PodStatus{Containers: []container.Status{{ID: "c1", Name: "app", State: container.StateRunning}}}
	old := *pod.Spec.Containers[0].Resources.DeepCopy()
	act := func(r v1.ResourceRequirements, ok bool) func(string) (v1.ResourceRequirements, bool) {
		return func(string) (v1.ResourceRequirements, bool) { return r, ok }
	}
	if got := ComputeResize(pod, st, act(old, true)); len(got) != 0 {
		t.Fatalf("nothing changed: %+v", got)
	}
	if got := ComputeResize(pod, st, act(v1.ResourceRequirements{}, false)); len(got) != 0 {
		t.Fatalf("no record counts as actuated: %+v", got)
	}
	smaller := *old.DeepCopy()
	smaller.Limits[v1.ResourceMemory] = resource.MustParse("1Gi")
	got := ComputeResize(pod, st, act(smaller, true))
	if len(got) != 1 || got[0].ID != "c1" || got[0].Restart {
		t.Fatalf("memory limit changed, NotRequired: %+v", got)
	}
	pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	if got := ComputeResize(pod, st, act(smaller, true)); len(got) != 1 || !got[0].Restart {
		t.Fatalf("memory limit changed, RestartContainer: %+v", got)
	}
	cpuOnly := *old.DeepCopy()
	cpuOnly.Limits[v1.ResourceCPU] = resource.MustParse("100m")
	if got := ComputeResize(pod, st, act(cpuOnly, true)); len(got) != 1 || got[0].Restart {
		t.Fatalf("cpu changed, memory's policy does not apply: %+v", got)
	}
	st.Containers[0].State = container.StateExited
	if got := ComputeResize(pod, st, act(smaller, true)); len(got) != 0 {
		t.Fatalf("a stopped container is not resized in place: %+v", got)
	}
}

// A running container whose allocation changed is updated in place
// through the CRI, the pod cgroup first when it grows.
func TestSyncPodResizesInPlace(t *testing.T) {
	e := newEnv(t)
	act := &fakeActuated{m: map[string]v1.ResourceRequirements{}}
	var cgroupCalls []string
	e.m.opts.Actuated = act
	e.m.opts.PodCgroup = func(p *v1.Pod) error {
		cgroupCalls = append(cgroupCalls, p.Spec.Containers[0].Resources.Limits.Memory().String())
		return nil
	}
	pod := testPod()
	if r, _ := e.sync(t, pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	if a, ok := act.Actuated(pod.UID, "app"); !ok || a.Limits.Memory().String() != "2Gi" {
		t.Fatalf("a started container's resources were not recorded: %v %v", a, ok)
	}
	var id string
	for cid := range e.rs.Containers {
		id = cid
	}
	pod.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("3Gi")
	e.rs.Called = nil
	r, _ := e.sync(t, pod)
	if got := steps(r); got != "ResizeContainer:app" {
		t.Fatalf("resize sync: %s (%v)", got, r.Error())
	}
	updated := false
	for _, c := range e.rs.GetCalls() {
		if c == "UpdateContainerResources" {
			updated = true
		}
		if c == "StopContainer" || c == "CreateContainer" {
			t.Errorf("an in-place resize called %s", c)
		}
	}
	if !updated {
		t.Error("UpdateContainerResources was not called")
	}
	if len(cgroupCalls) != 1 || cgroupCalls[0] != "3Gi" {
		t.Errorf("pod cgroup updates %v", cgroupCalls)
	}
	if a, _ := act.Actuated(pod.UID, "app"); a.Limits.Memory().String() != "3Gi" {
		t.Errorf("actuated after the resize: %v", a)
	}
	if _, ok := e.rs.Containers[id]; !ok {
		t.Error("the container was replaced")
	}
	// Nothing more to do the next time.
	if r, _ := e.sync(t, pod); len(r.Steps) != 0 {
		t.Errorf("a second sync did %s", steps(r))
	}

	// RestartContainer for memory: a new instance with the new resources.
	pod.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("1Gi")
	if r, _ := e.sync(t, pod); r.Error() != nil || steps(r) != "ResizeContainer:app" {
		t.Fatalf("restart resize: %s %v", steps(r), r.Error())
	}
	running := 0
	for _, c := range e.rs.Containers {
		if c.State == 1 { // CONTAINER_RUNNING
			running++
			if c.LinuxResources.MemoryLimitInBytes != 1<<30 {
				t.Errorf("the new instance's memory limit %d", c.LinuxResources.MemoryLimitInBytes)
			}
			if c.Annotations[AnnotationRestartCount] != "1" {
				t.Errorf("restart count %s", c.Annotations[AnnotationRestartCount])
			}
		}
	}
	if running != 1 {
		t.Errorf("%d running instances", running)
	}
	if len(cgroupCalls) != 2 || cgroupCalls[1] != "1Gi" {
		t.Errorf("a shrinking pod's cgroup goes last: %v", cgroupCalls)
	}
}
