package podstatus

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func TestEphemeralContainerStatuses(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "z-debug", Image: "img-z"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "b-debug", Image: "img-b"}},
	}
	observed := observedOf(
		inst("a", "c1", container.StateRunning, 0, 0, t0),
		inst("z-debug", "e1", container.StateExited, 3, 0, t0),
	)
	waiting := map[string]container.WaitingReason{
		"z-debug": {Reason: "CrashLoopBackOff", Message: "never for ephemeral"},
		"b-debug": {Reason: "ErrImagePull", Message: "no such image"},
	}
	s := Compute(pod, observed, waiting, nil, Options{Now: t0})
	if len(s.EphemeralContainerStatuses) != 2 {
		t.Fatalf("statuses %+v", s.EphemeralContainerStatuses)
	}
	z, b := s.EphemeralContainerStatuses[0], s.EphemeralContainerStatuses[1]
	if z.Name != "z-debug" || b.Name != "b-debug" {
		t.Errorf("ephemeral statuses must keep spec order: %s %s", z.Name, b.Name)
	}
	if z.State.Terminated == nil || z.State.Terminated.ExitCode != 3 || z.ContainerID != "containerd://e1" {
		t.Errorf("an exited ephemeral container stays terminated (never restarted): %+v", z.State)
	}
	if b.State.Waiting == nil || b.State.Waiting.Reason != "ErrImagePull" {
		t.Errorf("an ephemeral container that never ran shows its waiting reason: %+v", b.State)
	}
	if s.Phase != v1.PodRunning || len(s.ContainerStatuses) != 1 {
		t.Errorf("ephemeral containers must not change the phase or app statuses: %s %v", s.Phase, s.ContainerStatuses)
	}
}

func TestCapTerminationMessages(t *testing.T) {
	pod := podOf(v1.RestartPolicyNever, []string{"i"}, nil, "a", "b")
	long := strings.Repeat("m", 10000)
	s := &v1.PodStatus{
		ContainerStatuses:     []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: long}}}},
		InitContainerStatuses: []v1.ContainerStatus{{Name: "i", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: "short"}}}},
	}
	CapTerminationMessages(pod, s)
	if got := len(s.ContainerStatuses[0].State.Terminated.Message); got != MaxPodTerminationMessageBytes/3 {
		t.Errorf("message cut to %d bytes, want %d", got, MaxPodTerminationMessageBytes/3)
	}
	if s.InitContainerStatuses[0].LastTerminationState.Terminated.Message != "short" {
		t.Errorf("short message changed")
	}
}
