package kuberuntime

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeConditions returns the runtime's own readiness conditions
// (RuntimeReady, NetworkReady) from CRI Status, for the Node's Ready
// condition.
func (m *Manager) RuntimeConditions(ctx context.Context) ([]*runtimeapi.RuntimeCondition, error) {
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() == nil {
		return nil, nil
	}
	return resp.GetStatus().GetConditions(), nil
}
