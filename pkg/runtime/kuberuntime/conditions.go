package kuberuntime

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Status reports the runtime's own readiness conditions (RuntimeReady,
// NetworkReady) from CRI Status, for the Node's Ready condition, and its
// runtime handlers and features, for the Node's runtimeHandlers and
// features. A condition the runtime does not report counts as ready, as
// upstream.
func (m *Manager) Status(ctx context.Context) (container.RuntimeStatus, error) {
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		return container.RuntimeStatus{}, err
	}
	m.storeFeatures(resp)
	return runtimeStatus(resp), nil
}

// runtimeStatus maps a CRI Status response.
func runtimeStatus(resp *runtimeapi.StatusResponse) container.RuntimeStatus {
	st := container.RuntimeStatus{RuntimeReady: true, NetworkReady: true}
	for _, h := range resp.GetRuntimeHandlers() {
		st.Handlers = append(st.Handlers, container.RuntimeHandler{
			Name:                    h.GetName(),
			RecursiveReadOnlyMounts: h.GetFeatures().GetRecursiveReadOnlyMounts(),
			UserNamespaces:          h.GetFeatures().GetUserNamespaces(),
		})
	}
	if f := resp.GetFeatures(); f != nil {
		st.Features = &container.RuntimeFeatures{SupplementalGroupsPolicy: f.GetSupplementalGroupsPolicy()}
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Status {
			continue
		}
		switch c.Type {
		case runtimeapi.RuntimeReady:
			st.RuntimeReady = false
			st.Errors = append(st.Errors, fmt.Sprintf("container runtime is down: %s: %s", c.Reason, c.Message))
		case runtimeapi.NetworkReady:
			st.NetworkReady = false
			st.Errors = append(st.Errors, fmt.Sprintf("container runtime network not ready: %s: %s", c.Reason, c.Message))
		}
	}
	return st
}
