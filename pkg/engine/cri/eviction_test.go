package cri

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/pod/allocation"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// An evicted pod ends Failed with reason Evicted, the message, and a
// DisruptionTarget condition; the GC then sees it terminated.
func TestEvictPodEndsFailedEvicted(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", "hog", "")
	delete(p.Annotations, "kubernetes.io/config.source") // an API pod: static pods are critical
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the pod Running", func() bool { return h.phase("u1") == v1.PodRunning })
	if gone, terminated := h.eng.PodGCState("u1"); gone || terminated {
		t.Fatalf("running pod: gone %v terminated %v", gone, terminated)
	}
	msg := "The node was low on resource: memory. "
	h.eng.EvictPod(p, 1, msg)
	eventually.True(h.t, "the pod Failed", func() bool { return h.phase("u1") == v1.PodFailed })
	st, _ := h.core.Status().GetPodStatus("u1")
	if st.Reason != "Evicted" || st.Message != msg {
		t.Errorf("status reason %q message %q", st.Reason, st.Message)
	}
	found := false
	for _, c := range st.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet {
			found = true
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget condition: %+v", st.Conditions)
	}
	eventually.True(h.t, "the pod cleaned up", func() bool { return h.eng.PodCleanedUp("u1") })
	if _, terminated := h.eng.PodGCState("u1"); !terminated {
		t.Error("an evicted pod is not terminated for the GC")
	}
	if gone, _ := h.eng.PodGCState(types.UID("never-seen")); !gone {
		t.Error("an unknown pod is not gone for the GC")
	}
}

// An admit handler (the eviction manager under pressure) refuses a new
// pod with its reason and message.
func TestAdmitHandlerRefuses(t *testing.T) {
	h := newHarness(t)
	h.eng.AddAdmitHandler(func(p *v1.Pod) (bool, string, string) {
		if p.Name == "refused" {
			return false, "Evicted", "The node had condition: [DiskPressure]. "
		}
		return true, "", ""
	})
	h.send(podconfig.ADD, testPod("u1", "refused", ""), testPod("u2", "fine", ""))
	eventually.True(h.t, "the refused pod Failed", func() bool { return h.phase("u1") == v1.PodFailed })
	eventually.True(h.t, "the other pod Running", func() bool { return h.phase("u2") == v1.PodRunning })
	st, _ := h.core.Status().GetPodStatus("u1")
	if st.Reason != "Evicted" || st.Message != "The node had condition: [DiskPressure]. " {
		t.Errorf("refusal %q %q", st.Reason, st.Message)
	}
}

// A resize beyond the node's allocatable stays pending (Infeasible) and
// the runtime keeps running the allocated resources; one that fits is
// allocated and reported in the container's allocatedResources.
func TestResizeDecisionsInStatus(t *testing.T) {
	h := newHarness(t)
	alloc, err := allocation.New("")
	if err != nil {
		t.Fatal(err)
	}
	h.eng.allocation = alloc
	p := testPod("u1", "web", "")
	delete(p.Annotations, "kubernetes.io/config.source")
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}
	h.send(podconfig.ADD, p)
	eventually.True(h.t, "the pod Running", func() bool { return h.phase("u1") == v1.PodRunning })

	big := p.DeepCopy()
	big.Generation = 2
	big.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("64")
	h.send(podconfig.UPDATE, big)
	eventually.True(h.t, "PodResizePending Infeasible", func() bool {
		st, _ := h.core.Status().GetPodStatus("u1")
		c := podspec.FindCondition(st.Conditions, v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonInfeasible && strings.Contains(c.Message, "cpu, requested: 64000")
	})
	st, _ := h.core.Status().GetPodStatus("u1")
	if got := st.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "100m" {
		t.Errorf("allocatedResources %s while the resize is pending", got)
	}

	fits := p.DeepCopy()
	fits.Generation = 3
	fits.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200m")
	h.send(podconfig.UPDATE, fits)
	eventually.True(h.t, "the resize allocated", func() bool {
		st, _ := h.core.Status().GetPodStatus("u1")
		return podspec.FindCondition(st.Conditions, v1.PodResizePending) == nil &&
			len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].AllocatedResources.Cpu().String() == "200m"
	})
}
