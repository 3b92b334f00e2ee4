package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func sandbox(ips ...string) container.SandboxStatus {
	return container.SandboxStatus{ID: "sb", State: container.SandboxReady, IPs: ips}
}

func cond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	return podspec.FindCondition(s.Conditions, t)
}

func TestComputeRunningPod(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	pod.Generation = 3
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/custom", Status: v1.ConditionTrue}}
	observed := observedOf(inst("a", "c1", container.StateRunning, 0, 0, t0))
	observed.Sandboxes = []container.SandboxStatus{sandbox("10.1.0.5", "fd00::5")}
	observed.IPs = []string{"10.1.0.5", "fd00::5"}

	s := Compute(pod, observed, nil, nil, Options{Now: t0, HostIPs: []string{"192.168.1.2"}})
	if s.Phase != v1.PodRunning {
		t.Fatalf("phase %s", s.Phase)
	}
	if s.PodIP != "10.1.0.5" || len(s.PodIPs) != 2 || s.HostIP != "192.168.1.2" || len(s.HostIPs) != 1 {
		t.Errorf("ips %q %v %q %v", s.PodIP, s.PodIPs, s.HostIP, s.HostIPs)
	}
	if s.QOSClass != v1.PodQOSBestEffort || s.ObservedGeneration != 3 {
		t.Errorf("qos %s gen %d", s.QOSClass, s.ObservedGeneration)
	}
	if s.StartTime == nil || !s.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v", s.StartTime)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		c := cond(s, ct)
		if c == nil || c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0) || c.ObservedGeneration != 3 {
			t.Errorf("%s: %+v", ct, c)
		}
	}
	if c := cond(s, "example.com/custom"); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("foreign condition lost: %+v", s.Conditions)
	}
	if !s.ContainerStatuses[0].Ready || !*s.ContainerStatuses[0].Started {
		t.Errorf("container not ready: %+v", s.ContainerStatuses[0])
	}

	// Later: a container becomes unready; only changed conditions move, the
	// start time stays.
	t1 := t0.Add(time.Minute)
	observed2 := observedOf(inst("a", "c1", container.StateExited, 1, 0, t0))
	observed2.Sandboxes = observed.Sandboxes
	observed2.IPs = observed.IPs
	s2 := Compute(pod, observed2, map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}}, &s, Options{Now: t1})
	if s2.Phase != v1.PodRunning {
		t.Errorf("phase %s", s2.Phase)
	}
	if c := cond(s2, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t1) || c.Message != "containers with unready status: [a]" {
		t.Errorf("ready %+v", c)
	}
	if c := cond(s2, v1.PodScheduled); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("unchanged condition moved: %+v", c)
	}
	if !s2.StartTime.Time.Equal(t0) {
		t.Errorf("start time moved: %v", s2.StartTime)
	}
}

func TestComputeTerminalIsSticky(t *testing.T) {
	pod := podOf(v1.RestartPolicyNever, nil, nil, "a")
	done := observedOf(inst("a", "c1", container.StateExited, 0, 0, t0))
	s := Compute(pod, done, nil, nil, Options{Now: t0})
	if s.Phase != v1.PodSucceeded {
		t.Fatalf("phase %s", s.Phase)
	}
	if c := cond(s, v1.PodReady); c.Reason != ReasonPodCompleted {
		t.Errorf("ready %+v", c)
	}
	// The runtime loses the container (garbage collected): still Succeeded,
	// the terminated state survives.
	s2 := Compute(pod, nil, nil, &s, Options{Now: t0})
	if s2.Phase != v1.PodSucceeded || s2.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("phase %s state %+v", s2.Phase, s2.ContainerStatuses[0].State)
	}
	// Even a (wrongly) running container does not make it Running again.
	s3 := Compute(pod, observedOf(inst("a", "c2", container.StateRunning, 0, 1, t0)), nil, &s, Options{Now: t0})
	if s3.Phase != v1.PodSucceeded {
		t.Errorf("left terminal phase: %s", s3.Phase)
	}
	// The API's terminal phase counts too.
	api := pod.DeepCopy()
	api.Status.Phase = v1.PodFailed
	if s4 := Compute(api, observedOf(inst("a", "c2", container.StateRunning, 0, 1, t0)), nil, nil, Options{Now: t0}); s4.Phase != v1.PodFailed {
		t.Errorf("left API terminal phase: %s", s4.Phase)
	}
}

func TestComputeReasonAndFailure(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	run := observedOf(inst("a", "c1", container.StateRunning, 0, 0, t0))
	s := Compute(pod, run, nil, nil, Options{Now: t0, FailReason: "Evicted", FailMessage: "low on memory"})
	if s.Phase != v1.PodFailed || s.Reason != "Evicted" || s.Message != "low on memory" {
		t.Fatalf("got %s %q %q", s.Phase, s.Reason, s.Message)
	}
	// The reason stays with the phase.
	s2 := Compute(pod, nil, nil, &s, Options{Now: t0})
	if s2.Phase != v1.PodFailed || s2.Reason != "Evicted" {
		t.Errorf("got %s %q", s2.Phase, s2.Reason)
	}
}

func TestComputeTerminalDeletedPod(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	now := metav1.NewTime(t0)
	pod.DeletionTimestamp = &now
	killed := observedOf(inst("a", "c1", container.StateExited, 137, 0, t0))
	s := Compute(pod, killed, nil, nil, Options{Now: t0})
	if s.Phase != v1.PodRunning {
		t.Errorf("before the kubelet calls it terminal: %s", s.Phase)
	}
	s = Compute(pod, killed, nil, nil, Options{Now: t0, Terminal: true})
	if s.Phase != v1.PodFailed {
		t.Errorf("terminal: %s", s.Phase)
	}
}

func TestComputeIPs(t *testing.T) {
	pod := podOf(v1.RestartPolicyNever, nil, nil, "a")
	prev := v1.PodStatus{PodIP: "10.1.0.5", PodIPs: []v1.PodIP{{IP: "10.1.0.5"}}}
	stopped := observedOf(inst("a", "c1", container.StateExited, 0, 0, t0))
	stopped.Sandboxes = []container.SandboxStatus{{State: container.SandboxNotReady}}
	s := Compute(pod, stopped, nil, &prev, Options{Now: t0})
	if s.PodIP != "10.1.0.5" {
		t.Errorf("a stopped pod keeps its IP: %q", s.PodIP)
	}

	host := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	host.Spec.HostNetwork = true
	s = Compute(host, nil, nil, nil, Options{Now: t0, HostIPs: []string{"192.168.1.2", "fd00::2"}})
	if s.PodIP != "192.168.1.2" || len(s.PodIPs) != 2 {
		t.Errorf("host network pod IPs: %v", s.PodIPs)
	}
}

func TestComputeInitFailedNever(t *testing.T) {
	pod := podOf(v1.RestartPolicyNever, []string{"i"}, nil, "a")
	s := Compute(pod, observedOf(inst("i", "c1", container.StateExited, 1, 0, t0)), nil, nil, Options{Now: t0})
	if s.Phase != v1.PodFailed {
		t.Errorf("phase %s", s.Phase)
	}
	if c := cond(s, v1.PodInitialized); c.Status != v1.ConditionFalse || c.Reason != ReasonContainersNotInitialized {
		t.Errorf("initialized %+v", c)
	}
	wantWaiting(t, s.ContainerStatuses[0], ReasonPodInitializing)
}

func TestComputeTerminalMarksContainers(t *testing.T) {
	// Deleted while its image was being pulled: nothing ever ran.
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	s := Compute(pod, nil, map[string]container.WaitingReason{"a": {Reason: "ErrImagePull"}}, nil, Options{Now: t0, Terminal: true})
	if s.Phase != v1.PodFailed {
		t.Errorf("phase %s", s.Phase)
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != ReasonStatusUnknown || term.ExitCode != 137 {
		t.Errorf("state %+v", s.ContainerStatuses[0].State)
	}

	// Init container j never ran; i ran and is stuck: i terminated, j and
	// the app container stay waiting.
	pod = podOf(v1.RestartPolicyAlways, []string{"i", "j"}, nil, "a")
	s = Compute(pod, observedOf(inst("i", "c1", container.StateRunning, 0, 0, t0)), nil, nil, Options{Now: t0, Terminal: true})
	if s.Phase != v1.PodFailed {
		t.Errorf("phase %s", s.Phase)
	}
	if s.InitContainerStatuses[0].State.Terminated == nil || s.InitContainerStatuses[1].State.Waiting == nil || s.ContainerStatuses[0].State.Waiting == nil {
		t.Errorf("init %+v app %+v", s.InitContainerStatuses, s.ContainerStatuses)
	}
	if s.InitContainerStatuses[0].Started == nil || *s.InitContainerStatuses[0].Started {
		t.Errorf("a terminated container must not be started")
	}

	// A finished job keeps its real outcome.
	pod = podOf(v1.RestartPolicyNever, nil, nil, "a")
	s = Compute(pod, observedOf(inst("a", "c1", container.StateExited, 0, 0, t0)), nil, nil, Options{Now: t0, Terminal: true})
	if s.Phase != v1.PodSucceeded {
		t.Errorf("phase %s", s.Phase)
	}

	// MarkTerminated on an existing status.
	st := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(running("a"))}
	MarkTerminated(podOf(v1.RestartPolicyAlways, nil, nil, "a"), &st)
	if st.Phase != v1.PodFailed || st.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("MarkTerminated: %+v", st)
	}
}

// Every container status reports its volumeMounts, as upstream, with the
// recursive read-only mode the runtime handler's support gives; a
// container that has not run yet too.
func TestComputeVolumeMounts(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, nil, nil, "a", "b")
	ifp := v1.RecursiveReadOnlyIfPossible
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &ifp}, {Name: "tmp", MountPath: "/tmp"}}
	pod.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/d", ReadOnly: true}}
	observed := observedOf(inst("a", "c1", container.StateRunning, 0, 0, t0))
	for supported, want := range map[bool]v1.RecursiveReadOnlyMode{true: v1.RecursiveReadOnlyEnabled, false: v1.RecursiveReadOnlyDisabled} {
		s := Compute(pod, observed, nil, nil, Options{Now: t0, RecursiveReadOnlySupported: supported})
		a, b := podspec.FindStatus(s.ContainerStatuses, "a"), podspec.FindStatus(s.ContainerStatuses, "b")
		if a == nil || len(a.VolumeMounts) != 2 || a.VolumeMounts[0].MountPath != "/data" || a.VolumeMounts[0].RecursiveReadOnly == nil ||
			*a.VolumeMounts[0].RecursiveReadOnly != want || a.VolumeMounts[1].ReadOnly || a.VolumeMounts[1].RecursiveReadOnly != nil {
			t.Errorf("supported=%v: running container's volumeMounts %+v", supported, a)
		}
		if b == nil || len(b.VolumeMounts) != 1 || b.VolumeMounts[0].Name != "data" || *b.VolumeMounts[0].RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
			t.Errorf("supported=%v: waiting container's volumeMounts %+v", supported, b)
		}
	}
}
