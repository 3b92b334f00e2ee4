package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func ready(st v1.ContainerStatus) v1.ContainerStatus {
	st.Ready = true
	t := true
	st.Started = &t
	return st
}

func TestReadyToStartContainersCondition(t *testing.T) {
	tests := []struct {
		name     string
		observed *container.PodStatus
		expect   v1.ConditionStatus
	}{
		{"no runtime status", nil, v1.ConditionFalse},
		{"no sandbox", &container.PodStatus{}, v1.ConditionFalse},
		{"ready with ip", &container.PodStatus{Sandboxes: []container.SandboxStatus{{State: container.SandboxReady, IPs: []string{"10.0.0.1"}}}}, v1.ConditionTrue},
		{"ready host network", &container.PodStatus{Sandboxes: []container.SandboxStatus{{State: container.SandboxReady, HostNetwork: true}}}, v1.ConditionTrue},
		{"ready without ip", &container.PodStatus{Sandboxes: []container.SandboxStatus{{State: container.SandboxReady}}}, v1.ConditionFalse},
		{"newest not ready", &container.PodStatus{Sandboxes: []container.SandboxStatus{{State: container.SandboxNotReady}, {State: container.SandboxReady, IPs: []string{"10.0.0.1"}}}}, v1.ConditionFalse},
		{"two ready", &container.PodStatus{Sandboxes: []container.SandboxStatus{{State: container.SandboxReady, IPs: []string{"10.0.0.1"}}, {State: container.SandboxReady, IPs: []string{"10.0.0.2"}}}}, v1.ConditionFalse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ReadyToStartContainersCondition(tc.observed)
			if c.Type != v1.PodReadyToStartContainers || c.Status != tc.expect {
				t.Errorf("got %+v, want %s", c, tc.expect)
			}
		})
	}
}

func TestInitializedCondition(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, []string{"i", "j"}, []string{"s"}, "a")
	tests := []struct {
		name        string
		init, apps  []v1.ContainerStatus
		phase       v1.PodPhase
		status      v1.ConditionStatus
		reason, msg string
	}{
		{"all done", cs(ready(exited("i", 0)), ready(exited("j", 0)), ready(running("s"))), cs(waitingNew("a")), v1.PodPending, v1.ConditionTrue, "", ""},
		{"incomplete", cs(ready(exited("i", 0)), running("j"), ready(running("s"))), cs(waitingNew("a")), v1.PodPending, v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [j]"},
		{"sidecar not started", cs(ready(exited("i", 0)), ready(exited("j", 0)), running("s")), cs(waitingNew("a")), v1.PodPending, v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [s]"},
		{"unknown and incomplete", cs(running("i")), cs(waitingNew("a")), v1.PodPending, v1.ConditionFalse, ReasonContainersNotInitialized, "containers with unknown status: [s j], containers with incomplete status: [i]"},
		{"app ran before", cs(ready(exited("i", 0)), ready(exited("j", 0)), waitingAfter("s", 1)), cs(running("a")), v1.PodRunning, v1.ConditionTrue, "", ""},
		{"succeeded", cs(ready(exited("i", 0)), ready(exited("j", 0)), exited("s", 0)), cs(exited("a", 0)), v1.PodSucceeded, v1.ConditionTrue, ReasonPodCompleted, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := InitializedCondition(&pod.Spec, tc.init, tc.apps, tc.phase)
			if c.Type != v1.PodInitialized || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg {
				t.Errorf("got %+v", c)
			}
		})
	}
	if c := InitializedCondition(&podOf(v1.RestartPolicyAlways, nil, nil, "a").Spec, nil, nil, v1.PodPending); c.Status != v1.ConditionTrue {
		t.Errorf("no init containers: %+v", c)
	}
}

func TestContainersReadyAndReadyConditions(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, []string{"i"}, []string{"s"}, "a", "b")
	gated := podOf(v1.RestartPolicyAlways, nil, nil, "a", "b")
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	tests := []struct {
		name        string
		pod         *v1.Pod
		conds       []v1.PodCondition
		init, apps  []v1.ContainerStatus
		phase       v1.PodPhase
		status      v1.ConditionStatus
		reason, msg string
		readyStatus v1.ConditionStatus
		readyReason string
	}{
		{name: "all ready", pod: pod, init: cs(ready(exited("i", 0)), ready(running("s"))), apps: cs(ready(running("a")), ready(running("b"))), phase: v1.PodRunning,
			status: v1.ConditionTrue, readyStatus: v1.ConditionTrue},
		{name: "one unready", pod: pod, init: cs(ready(exited("i", 0)), ready(running("s"))), apps: cs(ready(running("a")), running("b")), phase: v1.PodRunning,
			status: v1.ConditionFalse, reason: ReasonContainersNotReady, msg: "containers with unready status: [b]", readyStatus: v1.ConditionFalse, readyReason: ReasonContainersNotReady},
		{name: "sidecar unready", pod: pod, init: cs(ready(exited("i", 0)), running("s")), apps: cs(ready(running("a")), ready(running("b"))), phase: v1.PodRunning,
			status: v1.ConditionFalse, reason: ReasonContainersNotReady, msg: "containers with unready status: [s]", readyStatus: v1.ConditionFalse, readyReason: ReasonContainersNotReady},
		{name: "unknown", pod: pod, init: cs(ready(exited("i", 0))), apps: cs(ready(running("a"))), phase: v1.PodRunning,
			status: v1.ConditionFalse, reason: ReasonContainersNotReady, msg: "containers with unknown status: [s b]", readyStatus: v1.ConditionFalse, readyReason: ReasonContainersNotReady},
		{name: "no statuses", pod: pod, phase: v1.PodPending,
			status: v1.ConditionFalse, reason: ReasonUnknownContainerStatuses, readyStatus: v1.ConditionFalse, readyReason: ReasonUnknownContainerStatuses},
		{name: "succeeded", pod: pod, init: cs(ready(exited("i", 0)), exited("s", 0)), apps: cs(exited("a", 0), exited("b", 0)), phase: v1.PodSucceeded,
			status: v1.ConditionFalse, reason: ReasonPodCompleted, readyStatus: v1.ConditionFalse, readyReason: ReasonPodCompleted},
		{name: "failed", pod: pod, init: cs(ready(exited("i", 0)), ready(running("s"))), apps: cs(ready(running("a")), exited("b", 1)), phase: v1.PodFailed,
			status: v1.ConditionFalse, reason: ReasonPodFailed, readyStatus: v1.ConditionFalse, readyReason: ReasonPodFailed},
		{name: "gate missing", pod: gated, apps: cs(ready(running("a")), ready(running("b"))), phase: v1.PodRunning,
			status: v1.ConditionTrue, readyStatus: v1.ConditionFalse, readyReason: ReasonReadinessGatesNotReady},
		{name: "gate false", pod: gated, conds: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionFalse}}, apps: cs(ready(running("a")), ready(running("b"))), phase: v1.PodRunning,
			status: v1.ConditionTrue, readyStatus: v1.ConditionFalse, readyReason: ReasonReadinessGatesNotReady},
		{name: "gate true", pod: gated, conds: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}, apps: cs(ready(running("a")), ready(running("b"))), phase: v1.PodRunning,
			status: v1.ConditionTrue, readyStatus: v1.ConditionTrue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ContainersReadyCondition(&tc.pod.Spec, tc.init, tc.apps, tc.phase)
			if c.Type != v1.ContainersReady || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg {
				t.Errorf("ContainersReady: got %+v", c)
			}
			r := ReadyCondition(&tc.pod.Spec, tc.conds, tc.init, tc.apps, tc.phase)
			if r.Type != v1.PodReady || r.Status != tc.readyStatus || r.Reason != tc.readyReason {
				t.Errorf("Ready: got %+v", r)
			}
		})
	}
}

func TestNeedsReadinessReconcile(t *testing.T) {
	gated := func(conds ...v1.PodCondition) *v1.Pod {
		p := podOf(v1.RestartPolicyAlways, nil, nil, "a")
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		p.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: conds, ContainerStatuses: cs(ready(running("a")))}
		return p
	}
	gateMissing := `corresponding condition of pod readiness gate "example.com/lb" does not exist.`
	notReady := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, Message: gateMissing}
	isReady := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	gateTrue := v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionTrue}
	gateFalse := v1.PodCondition{Type: "example.com/lb", Status: v1.ConditionFalse}
	noGates := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	noGates.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{notReady}, ContainerStatuses: cs(ready(running("a")))}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"gate set True by someone else, Ready still False", gated(gateTrue, notReady), true},
		{"gate set False, Ready still True", gated(gateFalse, isReady), true},
		{"Ready already follows the gate", gated(gateTrue, isReady), false},
		{"gate still missing, Ready False with that message", gated(notReady), false},
		{"gate missing, message outdated", gated(v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Message: "old"}), true},
		{"no Ready condition yet", gated(gateTrue), false},
		{"no readiness gates", noGates, false},
	} {
		if got := NeedsReadinessReconcile(tc.pod); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
