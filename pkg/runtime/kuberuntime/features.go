package kuberuntime

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeFeatures caches what the runtime reports it supports in its CRI
// Status: per runtime handler, user namespaces and recursive read-only
// mounts; and the supplemental groups policy. It is read on first need (a pod asking for such a
// feature), never on the start path of other pods, and refreshed by every
// Status call (the node status loop's).
type runtimeFeatures struct {
	mu     sync.Mutex
	read   bool
	userns map[string]bool
	rro    map[string]bool
	sgp    bool
}

func (m *Manager) loadFeatures(ctx context.Context) error {
	f := &m.features
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.read {
		return nil
	}
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("asking the runtime for its features: %w", err)
	}
	f.set(resp)
	return nil
}

// storeFeatures refreshes the cache from a Status response.
func (m *Manager) storeFeatures(resp *runtimeapi.StatusResponse) {
	m.features.mu.Lock()
	defer m.features.mu.Unlock()
	m.features.set(resp)
}

func (f *runtimeFeatures) set(resp *runtimeapi.StatusResponse) {
	f.userns, f.rro = map[string]bool{}, map[string]bool{}
	for _, h := range resp.GetRuntimeHandlers() {
		f.userns[h.GetName()] = h.GetFeatures().GetUserNamespaces()
		f.rro[h.GetName()] = h.GetFeatures().GetRecursiveReadOnlyMounts()
	}
	f.sgp = resp.GetFeatures().GetSupplementalGroupsPolicy()
	f.read = true
}

// SupportsUserNamespaces reports whether the runtime handler supports pods
// with their own user namespace (hostUsers: false). containerd 1.6 reports
// no handlers at all: no.
func (m *Manager) SupportsUserNamespaces(ctx context.Context, handler string) (bool, error) {
	if err := m.loadFeatures(ctx); err != nil {
		return false, err
	}
	m.features.mu.Lock()
	defer m.features.mu.Unlock()
	return m.features.userns[handler], nil
}

// SupportsSupplementalGroupsPolicy reports whether the runtime applies
// supplementalGroupsPolicy (Strict needs it).
func (m *Manager) SupportsSupplementalGroupsPolicy(ctx context.Context) (bool, error) {
	if err := m.loadFeatures(ctx); err != nil {
		return false, err
	}
	m.features.mu.Lock()
	defer m.features.mu.Unlock()
	return m.features.sgp, nil
}

// SupportsRecursiveReadOnlyMounts reports whether the runtime handler
// ("" is the default one) supports recursive read-only mounts. A runtime
// that reports no handlers (containerd 1.6), or not this one, does not.
func (m *Manager) SupportsRecursiveReadOnlyMounts(ctx context.Context, handler string) (bool, error) {
	if err := m.loadFeatures(ctx); err != nil {
		return false, err
	}
	m.features.mu.Lock()
	defer m.features.mu.Unlock()
	return m.features.rro[handler], nil
}

// PodSupportsRecursiveReadOnlyMounts reports whether the runtime handler
// of the pod's RuntimeClass supports recursive read-only mounts.
func (m *Manager) PodSupportsRecursiveReadOnlyMounts(ctx context.Context, pod *v1.Pod) (bool, error) {
	handler, err := m.runtimeHandler(ctx, pod)
	if err != nil {
		return false, err
	}
	return m.SupportsRecursiveReadOnlyMounts(ctx, handler)
}
