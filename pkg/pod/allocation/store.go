package allocation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Store keeps resources per pod and container in memory and in a
// checkpoint file, rewritten whole (through a temporary file and a rename)
// on every change, so a restarted kubelet finds them again.
type Store struct {
	path string
	mu   sync.RWMutex
	pods map[types.UID]map[string]v1.ResourceRequirements
}

// checkpoint is the file's format.
type checkpoint struct {
	Pods map[types.UID]map[string]v1.ResourceRequirements `json:"pods"`
}

// OpenStore loads the checkpoint at path ("" keeps it in memory only). An
// unreadable checkpoint is an error: silently forgetting allocations would
// restart resized containers with their old resources.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, pods: map[types.UID]map[string]v1.ResourceRequirements{}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s is corrupt: %w (remove it to start over)", path, err)
	}
	if c.Pods != nil {
		s.pods = c.Pods
	}
	return s, nil
}

// Get returns one container's resources.
func (s *Store) Get(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.pods[uid][name]
	return r, ok
}

// Pod returns a copy of the pod's resources by container name.
func (s *Store) Pod(uid types.UID) (map[string]v1.ResourceRequirements, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[uid]
	if !ok {
		return nil, false
	}
	out := make(map[string]v1.ResourceRequirements, len(p))
	for k, v := range p {
		out[k] = *v.DeepCopy()
	}
	return out, true
}

// SetPod replaces the pod's resources.
func (s *Store) SetPod(uid types.UID, rs map[string]v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[uid]; ok && equality.Semantic.DeepEqual(old, rs) {
		return nil
	}
	s.pods[uid] = rs
	return s.saveLocked()
}

// Set records one container's resources.
func (s *Store) Set(uid types.UID, name string, r v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[uid][name]; ok && equality.Semantic.DeepEqual(old, r) {
		return nil
	}
	if s.pods[uid] == nil {
		s.pods[uid] = map[string]v1.ResourceRequirements{}
	}
	s.pods[uid][name] = *r.DeepCopy()
	return s.saveLocked()
}

// RemoveOrphans forgets the pods keep does not claim.
func (s *Store) RemoveOrphans(keep func(types.UID) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.saveLocked()
}

func (s *Store) saveLocked() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(checkpoint{Pods: s.pods})
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}
