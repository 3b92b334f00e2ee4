// Package podmanager holds the kubelet's desired set of pods: what the
// sources say should run on this node, by UID, and the mirror pods that
// represent static pods in the API server, by full name. It decides
// nothing; the sync loop writes it and everyone else reads it.
package podmanager

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Manager is the desired pod set. Safe for concurrent use.
type Manager struct {
	mu      sync.RWMutex
	pods    map[types.UID]*v1.Pod
	mirrors map[string]*v1.Pod // by full name
}

// New returns an empty manager.
func New() *Manager {
	return &Manager{pods: map[types.UID]*v1.Pod{}, mirrors: map[string]*v1.Pod{}}
}

// AddOrUpdate records pods; mirror pods go to the mirror set.
func (m *Manager) AddOrUpdate(pods ...*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pods {
		if podspec.IsMirror(p) {
			m.mirrors[podspec.FullName(p)] = p
			continue
		}
		m.pods[p.UID] = p
	}
}

// Remove forgets pods.
func (m *Manager) Remove(pods ...*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pods {
		if podspec.IsMirror(p) {
			if cur, ok := m.mirrors[podspec.FullName(p)]; ok && cur.UID == p.UID {
				delete(m.mirrors, podspec.FullName(p))
			}
			continue
		}
		delete(m.pods, p.UID)
	}
}

// Get returns a desired pod by UID.
func (m *Manager) Get(uid types.UID) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.pods[uid]
	return p, ok
}

// GetByFullName returns the desired (non-mirror) pod with that full name.
func (m *Manager) GetByFullName(fullName string) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.pods {
		if podspec.FullName(p) == fullName {
			return p, true
		}
	}
	return nil, false
}

// MirrorOf returns the mirror pod of a static pod, if one is known.
func (m *Manager) MirrorOf(static *v1.Pod) (*v1.Pod, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.mirrors[podspec.FullName(static)]
	return p, ok
}

// Mirrors returns every known mirror pod.
func (m *Manager) Mirrors() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.mirrors))
	for _, p := range m.mirrors {
		out = append(out, p)
	}
	return out
}

// List returns the desired pods, ordered by namespace/name.
func (m *Manager) List() []*v1.Pod {
	m.mu.RLock()
	out := make([]*v1.Pod, 0, len(m.pods))
	for _, p := range m.pods {
		out = append(out, p)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return podspec.FullName(out[i]) < podspec.FullName(out[j]) })
	return out
}

// Has reports whether uid is desired.
func (m *Manager) Has(uid types.UID) bool {
	_, ok := m.Get(uid)
	return ok
}
