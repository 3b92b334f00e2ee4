package kuberuntime

import (
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

func TestRuntimeStatusFromCRI(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *runtimeapi.StatusResponse
		want container.RuntimeStatus
	}{
		{"containerd 1.6: conditions only",
			&runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}},
			container.RuntimeStatus{RuntimeReady: true, NetworkReady: true}},
		{"network not ready",
			&runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"}}}},
			container.RuntimeStatus{RuntimeReady: true, Errors: []string{"container runtime network not ready: NetworkPluginNotReady: cni plugin not initialized"}}},
		{"containerd 2: handlers and features",
			&runtimeapi.StatusResponse{
				Status: &runtimeapi.RuntimeStatus{},
				RuntimeHandlers: []*runtimeapi.RuntimeHandler{
					{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
					{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}},
					{Name: "bare"},
				},
				Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
			},
			container.RuntimeStatus{RuntimeReady: true, NetworkReady: true,
				Handlers: []container.RuntimeHandler{{Name: "", RecursiveReadOnlyMounts: true, UserNamespaces: true}, {Name: "runc", RecursiveReadOnlyMounts: true}, {Name: "bare"}},
				Features: &container.RuntimeFeatures{SupplementalGroupsPolicy: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runtimeStatus(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
