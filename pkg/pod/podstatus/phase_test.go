package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Shorthands for container statuses in tables.
func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func startedRunning(name string) v1.ContainerStatus {
	st := running(name)
	t := true
	st.Started = &t
	return st
}

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func waitingNew(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonContainerCreating}}}
}

func waitingAfter(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name:                 name,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}},
	}
}

func cs(list ...v1.ContainerStatus) []v1.ContainerStatus { return list }

func podOf(policy v1.RestartPolicy, init []string, sidecars []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	p.Spec.RestartPolicy = policy
	always := v1.ContainerRestartPolicyAlways
	for _, n := range sidecars {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n, RestartPolicy: &always})
	}
	for _, n := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img-" + n})
	}
	return p
}

func TestPhase(t *testing.T) {
	static := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	static.Annotations = map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile}

	tests := []struct {
		name   string
		pod    *v1.Pod
		init   []v1.ContainerStatus
		apps   []v1.ContainerStatus
		facts  PhaseFacts
		expect v1.PodPhase
	}{
		{"no status yet", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, nil, PhaseFacts{}, v1.PodPending},
		{"creating", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"one of two started", podOf(v1.RestartPolicyAlways, nil, nil, "a", "b"), nil, cs(running("a"), waitingNew("b")), PhaseFacts{}, v1.PodPending},
		{"all running", podOf(v1.RestartPolicyAlways, nil, nil, "a", "b"), nil, cs(running("a"), running("b")), PhaseFacts{}, v1.PodRunning},
		{"running and one exited", podOf(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, cs(running("a"), exited("b", 1)), PhaseFacts{}, v1.PodRunning},
		{"Always all exited 0 stays Running", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(exited("a", 0)), PhaseFacts{}, v1.PodRunning},
		{"Always crashlooping is Running", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(waitingAfter("a", 1)), PhaseFacts{}, v1.PodRunning},
		{"unset policy behaves as Always", podOf("", nil, nil, "a"), nil, cs(exited("a", 0)), PhaseFacts{}, v1.PodRunning},
		{"OnFailure all exited 0", podOf(v1.RestartPolicyOnFailure, nil, nil, "a", "b"), nil, cs(exited("a", 0), exited("b", 0)), PhaseFacts{}, v1.PodSucceeded},
		{"OnFailure a failure restarts", podOf(v1.RestartPolicyOnFailure, nil, nil, "a", "b"), nil, cs(exited("a", 0), exited("b", 2)), PhaseFacts{}, v1.PodRunning},
		{"Never all exited 0", podOf(v1.RestartPolicyNever, nil, nil, "a"), nil, cs(exited("a", 0)), PhaseFacts{}, v1.PodSucceeded},
		{"Never one failed", podOf(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, cs(exited("a", 0), exited("b", 1)), PhaseFacts{}, v1.PodFailed},
		{"terminal overrides Always: success", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(exited("a", 0)), PhaseFacts{Terminal: true}, v1.PodSucceeded},
		{"terminal overrides Always: failure", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(exited("a", 137)), PhaseFacts{Terminal: true}, v1.PodFailed},
		{"terminal static pod keeps policy", static, nil, cs(exited("a", 0)), PhaseFacts{Terminal: true}, v1.PodRunning},
		{"terminal but still running", podOf(v1.RestartPolicyAlways, nil, nil, "a"), nil, cs(running("a")), PhaseFacts{Terminal: true}, v1.PodRunning},
		{"missing status", podOf(v1.RestartPolicyNever, nil, nil, "a", "b"), nil, cs(running("a")), PhaseFacts{}, v1.PodPending},

		{"init running", podOf(v1.RestartPolicyAlways, []string{"i"}, nil, "a"), cs(running("i")), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"init done, app running", podOf(v1.RestartPolicyAlways, []string{"i"}, nil, "a"), cs(exited("i", 0)), cs(running("a")), PhaseFacts{Initialized: true}, v1.PodRunning},
		{"init failed Never", podOf(v1.RestartPolicyNever, []string{"i"}, nil, "a"), cs(exited("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodFailed},
		{"init failed waiting Never", podOf(v1.RestartPolicyNever, []string{"i"}, nil, "a"), cs(waitingAfter("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodFailed},
		{"init failed OnFailure retries", podOf(v1.RestartPolicyOnFailure, []string{"i"}, nil, "a"), cs(waitingAfter("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"init failed Always retries", podOf(v1.RestartPolicyAlways, []string{"i"}, nil, "a"), cs(exited("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"second init not run", podOf(v1.RestartPolicyAlways, []string{"i", "j"}, nil, "a"), cs(exited("i", 0)), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},

		{"sidecar not started", podOf(v1.RestartPolicyAlways, nil, []string{"s"}, "a"), cs(running("s")), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"sidecar started, app running", podOf(v1.RestartPolicyAlways, nil, []string{"s"}, "a"), cs(startedRunning("s")), cs(running("a")), PhaseFacts{Initialized: true}, v1.PodRunning},
		{"sidecar restarting after init", podOf(v1.RestartPolicyAlways, nil, []string{"s"}, "a"), cs(waitingAfter("s", 1)), cs(running("a")), PhaseFacts{Initialized: true}, v1.PodRunning},
		{"sidecar unstarted after init does not hold", podOf(v1.RestartPolicyAlways, nil, []string{"s"}, "a"), cs(running("s")), cs(running("a")), PhaseFacts{Initialized: true}, v1.PodRunning},
		{"job with sidecar: app done, sidecar stopped", podOf(v1.RestartPolicyNever, nil, []string{"s"}, "a"), cs(exited("s", 137)), cs(exited("a", 0)), PhaseFacts{Initialized: true, Terminal: true}, v1.PodSucceeded},
		{"job with sidecar: app done, sidecar running", podOf(v1.RestartPolicyNever, nil, []string{"s"}, "a"), cs(startedRunning("s")), cs(exited("a", 0)), PhaseFacts{Initialized: true}, v1.PodRunning},

		// Container-level restartPolicy and restartPolicyRules
		// (ContainerRestartRules) override the pod's policy.
		{"Never pod, container Always: restarting", withPolicy(podOf(v1.RestartPolicyNever, nil, nil, "a"), "a", v1.ContainerRestartPolicyAlways), nil, cs(exited("a", 1)), PhaseFacts{}, v1.PodRunning},
		{"Always pod, container Never: failed", withPolicy(podOf(v1.RestartPolicyAlways, nil, nil, "a"), "a", v1.ContainerRestartPolicyNever), nil, cs(exited("a", 1)), PhaseFacts{}, v1.PodFailed},
		{"Always pod, container Never: succeeded", withPolicy(podOf(v1.RestartPolicyAlways, nil, nil, "a"), "a", v1.ContainerRestartPolicyNever), nil, cs(exited("a", 0)), PhaseFacts{}, v1.PodSucceeded},
		{"Never pod, rule matches exit 42: restarting", withRule(withPolicy(podOf(v1.RestartPolicyNever, nil, nil, "a"), "a", v1.ContainerRestartPolicyNever), "a", v1.ContainerRestartRuleOnExitCodesOpIn, 42), nil, cs(waitingAfter("a", 42)), PhaseFacts{}, v1.PodRunning},
		{"Never pod, rule does not match exit 1: failed", withRule(withPolicy(podOf(v1.RestartPolicyNever, nil, nil, "a"), "a", v1.ContainerRestartPolicyNever), "a", v1.ContainerRestartRuleOnExitCodesOpIn, 42), nil, cs(exited("a", 1)), PhaseFacts{}, v1.PodFailed},
		{"Never pod, init container OnFailure retries", withPolicy(podOf(v1.RestartPolicyNever, []string{"i"}, nil, "a"), "i", v1.ContainerRestartPolicyOnFailure), cs(waitingAfter("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodPending},
		{"Always pod, init container Never fails the pod", withPolicy(podOf(v1.RestartPolicyAlways, []string{"i"}, nil, "a"), "i", v1.ContainerRestartPolicyNever), cs(exited("i", 1)), cs(waitingNew("a")), PhaseFacts{}, v1.PodFailed},
		{"terminal overrides a container's Always", withPolicy(podOf(v1.RestartPolicyNever, nil, nil, "a"), "a", v1.ContainerRestartPolicyAlways), nil, cs(exited("a", 1)), PhaseFacts{Terminal: true}, v1.PodFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phase(tc.pod, tc.init, tc.apps, tc.facts); got != tc.expect {
				t.Errorf("Phase = %s, want %s", got, tc.expect)
			}
		})
	}
}

// withPolicy sets the restartPolicy of the container (init or app) named name.
func withPolicy(pod *v1.Pod, name string, p v1.ContainerRestartPolicy) *v1.Pod {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				list[i].RestartPolicy = &p
			}
		}
	}
	return pod
}

// withRule adds a Restart rule on the given exit codes to the container named name.
func withRule(pod *v1.Pod, name string, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) *v1.Pod {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				list[i].RestartPolicyRules = append(list[i].RestartPolicyRules, v1.ContainerRestartRule{
					Action:    v1.ContainerRestartRuleActionRestart,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes},
				})
			}
		}
	}
	return pod
}
