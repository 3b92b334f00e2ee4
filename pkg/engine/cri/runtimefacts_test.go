package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func TestNodeRuntimeFacts(t *testing.T) {
	rro := func(name string, rro bool) v1.NodeRuntimeHandler {
		return v1.NodeRuntimeHandler{Name: name, Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(rro), UserNamespaces: ptr.To(false)}}
	}
	for _, tc := range []struct {
		name string
		in   container.RuntimeStatus
		want *nodestatus.RuntimeFacts
	}{
		{"containerd 1.6: no handlers, no features", container.RuntimeStatus{RuntimeReady: true, NetworkReady: true}, &nodestatus.RuntimeFacts{}},
		{"containerd 2: default and runc handlers, features",
			container.RuntimeStatus{
				Handlers: []container.RuntimeHandler{{Name: "", RecursiveReadOnlyMounts: true, UserNamespaces: true}, {Name: "runc", RecursiveReadOnlyMounts: true}},
				Features: &container.RuntimeFeatures{SupplementalGroupsPolicy: true},
			},
			&nodestatus.RuntimeFacts{Handlers: []v1.NodeRuntimeHandler{rro("", true), rro("runc", true)}, Features: &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}}},
		{"a handler without recursive read-only mounts",
			container.RuntimeStatus{Handlers: []container.RuntimeHandler{{Name: "old"}}, Features: &container.RuntimeFeatures{}},
			&nodestatus.RuntimeFacts{Handlers: []v1.NodeRuntimeHandler{rro("old", false)}, Features: &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(false)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeRuntimeFacts(tc.in); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Regression: a runtime reporting user namespace support made the node
// advertise it, while this kubelet refuses every hostUsers: false pod.
func TestNodeNeverAdvertisesUserNamespaces(t *testing.T) {
	got := nodeRuntimeFacts(container.RuntimeStatus{Handlers: []container.RuntimeHandler{{Name: "", UserNamespaces: true}}})
	if len(got.Handlers) != 1 || got.Handlers[0].Features.UserNamespaces == nil || *got.Handlers[0].Features.UserNamespaces {
		t.Errorf("handlers %+v: userNamespaces must be false", got.Handlers)
	}
}
