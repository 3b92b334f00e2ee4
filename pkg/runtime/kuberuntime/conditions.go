package kuberuntime

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Status reports the runtime's own readiness conditions (RuntimeReady,
// NetworkReady) from CRI Status, for the Node's Ready condition. A
// condition the runtime does not report counts as ready, as upstream.
func (m *Manager) Status(ctx context.Context) (container.RuntimeStatus, error) {
	st := container.RuntimeStatus{RuntimeReady: true, NetworkReady: true}
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		return container.RuntimeStatus{}, err
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
	return st, nil
}
