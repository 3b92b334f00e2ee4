package nodestatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The runtime's handlers and features reach status.runtimeHandlers and
// status.features; while they are unknown (the runtime did not answer) the
// last reported stay; a runtime that reports none clears them.
func TestSetStatusRuntimeHandlersAndFeatures(t *testing.T) {
	cfg := &Config{NodeName: "n"}
	base := Facts{
		Capacity:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("10")},
		Readiness: Readiness{RuntimeReady: true, NetworkReady: true},
	}
	handlers := []v1.NodeRuntimeHandler{
		{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(true), UserNamespaces: ptr.To(false)}},
		{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(true), UserNamespaces: ptr.To(false)}},
	}
	features := &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}

	node := NewNode(cfg, base)
	reported := base
	reported.Runtime = &RuntimeFacts{Handlers: handlers, Features: features}
	SetStatus(node, cfg, reported, metav1.Now())
	if !equality.Semantic.DeepEqual(node.Status.RuntimeHandlers, handlers) || !equality.Semantic.DeepEqual(node.Status.Features, features) {
		t.Fatalf("reported: handlers %+v features %+v", node.Status.RuntimeHandlers, node.Status.Features)
	}

	SetStatus(node, cfg, base, metav1.Now()) // runtime unknown
	if !equality.Semantic.DeepEqual(node.Status.RuntimeHandlers, handlers) || !equality.Semantic.DeepEqual(node.Status.Features, features) {
		t.Errorf("unknown runtime must keep the last report: handlers %+v features %+v", node.Status.RuntimeHandlers, node.Status.Features)
	}

	none := base
	none.Runtime = &RuntimeFacts{} // containerd 1.6: no handlers, no features
	SetStatus(node, cfg, none, metav1.Now())
	if node.Status.RuntimeHandlers != nil || node.Status.Features != nil {
		t.Errorf("a runtime reporting none must clear them: handlers %+v features %+v", node.Status.RuntimeHandlers, node.Status.Features)
	}
}
