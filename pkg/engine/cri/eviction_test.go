package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
)

// An evicted pod ends Failed with reason Evicted, the message, and a
// DisruptionTarget condition; the GC then sees it terminated.
func TestEvictPodEndsFailedEvicted(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", "hog", "")
	delete(p.Annotations, "kubernetes.io/config.source") // an API pod: static pods are critical
	h.send(podconfig.ADD, p)
	h.eventually("the pod Running", func() bool { return h.phase("u1") == v1.PodRunning })
	if gone, terminated := h.eng.PodGCState("u1"); gone || terminated {
		t.Fatalf("running pod: gone %v terminated %v", gone, terminated)
	}
	msg := "The node was low on resource: memory. "
	h.eng.EvictPod(p, 1, msg)
	h.eventually("the pod Failed", func() bool { return h.phase("u1") == v1.PodFailed })
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
	h.eventually("the pod cleaned up", func() bool { return h.eng.PodCleanedUp("u1") })
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
	h.eventually("the refused pod Failed", func() bool { return h.phase("u1") == v1.PodFailed })
	h.eventually("the other pod Running", func() bool { return h.phase("u2") == v1.PodRunning })
	st, _ := h.core.Status().GetPodStatus("u1")
	if st.Reason != "Evicted" || st.Message != "The node had condition: [DiskPressure]. " {
		t.Errorf("refusal %q %q", st.Reason, st.Message)
	}
}
