package cri

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
)

// statusOf runs pod on an engine built with deps changed by mut and
// returns its status once the pod is Running.
func statusOf(t *testing.T, mut func(*Deps), pod *v1.Pod) v1.PodStatus {
	t.Helper()
	h := newHarnessWith(t, mut)
	h.send(podconfig.ADD, pod)
	eventually.True(h.t, "the pod Running", func() bool { return h.phase(pod.UID) == v1.PodRunning })
	st, _ := h.core.Status().GetPodStatus(pod.UID)
	return st
}

func hasCondition(st v1.PodStatus, c v1.PodConditionType) bool {
	for _, x := range st.Conditions {
		if x.Type == c {
			return true
		}
	}
	return false
}

// Each feature gate the engine wires turns its feature off, and the
// defaults keep it on.
func TestEngineFeatureGatesOff(t *testing.T) {
	pod := func() *v1.Pod {
		p := testPod("g1", "gated", "100m")
		p.Generation = 3
		return p
	}

	// Defaults: every wired feature on.
	st := statusOf(t, func(*Deps) {}, pod())
	if st.ObservedGeneration != 3 || !hasCondition(st, v1.PodReadyToStartContainers) || st.ContainerStatuses[0].AllocatedResources == nil {
		t.Fatalf("defaults: observedGeneration=%d readyToStart=%v allocatedResources=%v",
			st.ObservedGeneration, hasCondition(st, v1.PodReadyToStartContainers), st.ContainerStatuses[0].AllocatedResources)
	}

	t.Run("PodObservedGenerationTracking", func(t *testing.T) {
		st := statusOf(t, func(d *Deps) { d.Features = d.Features.With(features.PodObservedGenerationTracking, false) }, pod())
		if st.ObservedGeneration != 0 {
			t.Errorf("status observedGeneration = %d, want none", st.ObservedGeneration)
		}
		for _, c := range st.Conditions {
			if c.ObservedGeneration != 0 {
				t.Errorf("condition %s observedGeneration = %d, want none", c.Type, c.ObservedGeneration)
			}
		}
	})
	t.Run("PodReadyToStartContainersCondition", func(t *testing.T) {
		st := statusOf(t, func(d *Deps) { d.Features = d.Features.With(features.PodReadyToStartContainersCondition, false) }, pod())
		if hasCondition(st, v1.PodReadyToStartContainers) {
			t.Errorf("conditions %v carry PodReadyToStartContainers", st.Conditions)
		}
		if !hasCondition(st, v1.PodReady) {
			t.Errorf("conditions %v lost Ready", st.Conditions)
		}
	})
	// InPlacePodVerticalScaling off is the engine without an allocation
	// (pkg/kubelet's newAllocation): statuses carry no allocated
	// resources.
	t.Run("InPlacePodVerticalScaling", func(t *testing.T) {
		st := statusOf(t, func(d *Deps) { d.Allocation = nil }, pod())
		if st.ContainerStatuses[0].AllocatedResources != nil || hasCondition(st, v1.PodResizePending) {
			t.Errorf("allocatedResources %v, conditions %v", st.ContainerStatuses[0].AllocatedResources, st.Conditions)
		}
	})
}

// PodLevelResources off: a pod with spec.resources is rejected with
// upstream's reason; on (the default), it runs.
func TestPodLevelResourcesGate(t *testing.T) {
	pod := func() *v1.Pod {
		p := testPod("plr", "pod-level", "")
		p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}}
		return p
	}
	statusOf(t, func(*Deps) {}, pod())

	h := newHarnessWith(t, func(d *Deps) { d.Features = d.Features.With(features.PodLevelResources, false) })
	h.send(podconfig.ADD, pod())
	eventually.True(h.t, "the pod Failed", func() bool { return h.phase("plr") == v1.PodFailed })
	st, _ := h.core.Status().GetPodStatus("plr")
	if st.Reason != "PodLevelResourcesNotSupported" || st.Message != "PodLevelResources feature gate is disabled" {
		t.Errorf("reason %q message %q", st.Reason, st.Message)
	}
	if n := h.rt.count("SyncPod"); n != 0 {
		t.Errorf("the rejected pod reached the runtime (%d SyncPod calls)", n)
	}
	// A pod without pod-level resources still runs.
	h.send(podconfig.ADD, testPod("plain", "plain", "100m"))
	eventually.True(h.t, "the plain pod Running", func() bool { return h.phase("plain") == v1.PodRunning })
}

// ContainerRestartRules off: a pod whose container sets its own restart
// policy is rejected, naming the field, before it reaches the runtime; a
// plain pod still runs.
func TestContainerRestartRulesGate(t *testing.T) {
	h := newHarnessWith(t, func(d *Deps) { d.Features = d.Features.With(features.ContainerRestartRules, false) })
	p := testPod("crr", "own-policy", "")
	never := v1.ContainerRestartPolicyNever
	p.Spec.Containers[0].RestartPolicy = &never
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the pod Failed", func() bool { return h.phase("crr") == v1.PodFailed })
	st, _ := h.core.Status().GetPodStatus("crr")
	if st.Reason != "ContainerRestartRulesNotSupported" || !strings.Contains(st.Message, "spec.containers[0].restartPolicy") {
		t.Errorf("reason %q message %q", st.Reason, st.Message)
	}
	if n := h.rt.count("SyncPod"); n != 0 {
		t.Errorf("the rejected pod reached the runtime (%d SyncPod calls)", n)
	}
	h.send(podconfig.ADD, testPod("plain", "plain", "100m"))
	eventually.True(h.t, "the plain pod Running", func() bool { return h.phase("plain") == v1.PodRunning })
}
