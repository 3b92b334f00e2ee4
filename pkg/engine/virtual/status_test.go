package virtual

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/provider"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func specPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Generation: 3},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers: []v1.Container{{Name: "a", Image: "img-a", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}, {Name: "b", Image: "img-b"}},
			ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/gate"}},
		},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{
			{Type: "example.com/gate", Status: v1.ConditionTrue},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
		}},
	}
}

func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}}
}

func cond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	return podspec.FindCondition(s.Conditions, t)
}

func TestAPIStatus(t *testing.T) {
	done := v1.ContainerStatus{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}
	for _, tc := range []struct {
		name     string
		provided *v1.PodStatus
		check    func(t *testing.T, s v1.PodStatus)
	}{
		{"nothing reported yet", nil, func(t *testing.T, s v1.PodStatus) {
			if s.Phase != v1.PodPending || len(s.ContainerStatuses) != 2 || len(s.InitContainerStatuses) != 1 {
				t.Fatalf("status = %+v", s)
			}
			if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != reasonInitializing || s.ContainerStatuses[0].Image != "img-a" {
				t.Errorf("app container = %+v, want waiting PodInitializing with its image", s.ContainerStatuses[0])
			}
			if w := s.InitContainerStatuses[0].State.Waiting; w == nil || w.Reason != reasonCreating {
				t.Errorf("init container = %+v", s.InitContainerStatuses[0])
			}
			if c := cond(s, v1.PodReady); c == nil || c.Status != v1.ConditionFalse {
				t.Errorf("Ready = %+v", c)
			}
			if c := cond(s, v1.PodReadyToStartContainers); c == nil || c.Status != v1.ConditionFalse {
				t.Errorf("ReadyToStartContainers = %+v", c)
			}
		}},
		{"running, provider gives no conditions", &v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7",
			InitContainerStatuses: []v1.ContainerStatus{done},
			ContainerStatuses:     []v1.ContainerStatus{running("b"), running("a"), running("not-in-spec")}}, func(t *testing.T, s v1.PodStatus) {
			if len(s.ContainerStatuses) != 2 || s.ContainerStatuses[0].Name != "a" || s.ContainerStatuses[1].Name != "b" {
				t.Errorf("container statuses not in spec order or with strangers: %+v", s.ContainerStatuses)
			}
			if s.ContainerStatuses[0].Image != "img-a" {
				t.Errorf("image not filled in: %q", s.ContainerStatuses[0].Image)
			}
			for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized, v1.PodReadyToStartContainers, v1.PodScheduled} {
				if c := cond(s, ct); c == nil || c.Status != v1.ConditionTrue || c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(now) {
					t.Errorf("%s = %+v", ct, c)
				}
			}
			if c := cond(s, "example.com/gate"); c == nil {
				t.Error("the readiness gate's condition (not the kubelet's) was dropped")
			}
			if len(s.PodIPs) != 1 || s.PodIPs[0].IP != "10.0.0.7" || s.HostIP != "192.0.2.1" || len(s.HostIPs) != 1 {
				t.Errorf("IPs = %q %v %q %v", s.PodIP, s.PodIPs, s.HostIP, s.HostIPs)
			}
			if s.QOSClass != v1.PodQOSBurstable || s.ObservedGeneration != 3 {
				t.Errorf("qos %s generation %d", s.QOSClass, s.ObservedGeneration)
			}
		}},
		{"provider's own conditions and host IP win", &v1.PodStatus{Phase: v1.PodRunning, HostIP: "172.16.0.9",
			InitContainerStatuses: []v1.ContainerStatus{done},
			ContainerStatuses:     []v1.ContainerStatus{running("a"), running("b")},
			Conditions:            []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "BackendSaysNo"}, {Type: "Foreign", Status: v1.ConditionTrue}}}, func(t *testing.T, s v1.PodStatus) {
			if c := cond(s, v1.PodReady); c == nil || c.Reason != "BackendSaysNo" {
				t.Errorf("Ready = %+v, want the provider's", c)
			}
			if cond(s, "Foreign") != nil {
				t.Error("a provider condition the kubelet does not own must not be written")
			}
			if s.HostIP != "172.16.0.9" {
				t.Errorf("hostIP = %s", s.HostIP)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, apiStatus(specPod(), tc.provided, nil, []string{"192.0.2.1"}, now)) })
	}
}

// Transition times move only when a condition's status changes.
func TestAPIStatusKeepsTransitionTimes(t *testing.T) {
	pod := specPod()
	first := apiStatus(pod, nil, nil, nil, now)
	later := now.Add(time.Minute)
	second := apiStatus(pod, nil, &first, nil, later)
	if c := cond(second, v1.PodReady); !c.LastTransitionTime.Time.Equal(now) {
		t.Errorf("unchanged Ready moved to %v", c.LastTransitionTime)
	}
	st := &v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}},
		ContainerStatuses: []v1.ContainerStatus{running("a"), running("b")}}
	third := apiStatus(pod, st, &second, nil, later)
	if c := cond(third, v1.PodReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("Ready after change = %+v", c)
	}
}

func TestFailureStatus(t *testing.T) {
	pod := specPod()
	s := failureStatus(pod, nil, ReasonCreateFailed, "backend down", false, nil, now)
	if s.Phase != v1.PodPending || s.Reason != "" {
		t.Errorf("retried failure: phase %s reason %q", s.Phase, s.Reason)
	}
	for _, cs := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		if w := cs.State.Waiting; w == nil || w.Reason != ReasonCreateFailed || w.Message != "backend down" {
			t.Errorf("container %s = %+v", cs.Name, cs.State)
		}
	}
	f := failureStatus(pod, nil, ReasonCreateFailed, "refused", true, nil, now)
	if f.Phase != v1.PodFailed || f.Reason != ReasonCreateFailed || f.Message != "refused" {
		t.Errorf("terminal failure = %s %s %s", f.Phase, f.Reason, f.Message)
	}
	if c := cond(f, v1.PodReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready of a failed pod = %+v", c)
	}
}

func TestTerminatedStatus(t *testing.T) {
	pod := specPod()
	last := apiStatus(pod, &v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}},
		ContainerStatuses: []v1.ContainerStatus{running("a"), running("b")}}, nil, nil, now)
	s := terminatedStatus(pod, &last, ReasonPodLost, msgPodLost, nil, now)
	if s.Phase != v1.PodFailed || s.Reason != ReasonPodLost {
		t.Errorf("phase %s reason %s", s.Phase, s.Reason)
	}
	for _, cs := range s.ContainerStatuses {
		if cs.State.Terminated == nil || cs.Ready {
			t.Errorf("container %s = %+v ready %v", cs.Name, cs.State, cs.Ready)
		}
	}
	succeeded := last.DeepCopy()
	succeeded.Phase = v1.PodSucceeded
	if s := terminatedStatus(pod, succeeded, "", "", nil, now); s.Phase != v1.PodSucceeded {
		t.Errorf("a Succeeded pod became %s", s.Phase)
	}
	if runsNothing(&last) || !runsNothing(&s) {
		t.Error("runsNothing")
	}
}

func TestMapNodeStatus(t *testing.T) {
	ns := provider.NodeStatus{
		Capacity:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("100")},
		Addresses: []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.5"}, {Type: v1.NodeInternalIP, Address: "192.0.2.1"}},
		Labels:    map[string]string{"topology.kubernetes.io/zone": "z1", v1.LabelHostname: "not-me"},
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionFalse, Message: "backend unreachable"},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionTrue},
			{Type: "BackendQuota", Status: v1.ConditionFalse},
		},
	}
	f := MapNodeStatus(ns, "mock", "vn", []string{"192.0.2.1"}, v1.ResourceList{v1.ResourcePods: resource.MustParse("10")})
	if q := f.Capacity[v1.ResourcePods]; q.Value() != 10 {
		t.Errorf("pods capacity %s, want the override", q.String())
	}
	if q := f.Allocatable[v1.ResourceCPU]; q.Value() != 8 {
		t.Errorf("allocatable cpu %s, want capacity", q.String())
	}
	if len(f.Addresses) != 3 || f.Addresses[0].Address != "192.0.2.1" || f.Addresses[1].Type != v1.NodeHostName || f.Addresses[2].Address != "203.0.113.5" {
		t.Errorf("addresses = %v", f.Addresses)
	}
	if f.Labels[v1.LabelHostname] != "vn" || f.Labels["topology.kubernetes.io/zone"] != "z1" || f.Labels[v1.LabelOSStable] != "linux" {
		t.Errorf("labels = %v", f.Labels)
	}
	if len(f.Readiness.Errors) != 1 || f.Readiness.Errors[0] != "backend unreachable" || !f.Pressure.Disk || f.Pressure.Memory {
		t.Errorf("readiness %+v pressure %+v", f.Readiness, f.Pressure)
	}
	if len(f.Conditions) != 1 || f.Conditions[0].Type != "BackendQuota" {
		t.Errorf("extra conditions = %v", f.Conditions)
	}
	if f.NodeInfo.ContainerRuntimeVersion != "mock://unknown" {
		t.Errorf("runtime version %q", f.NodeInfo.ContainerRuntimeVersion)
	}
}
