package allocation

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	// encoded is each pod's member of the file, as JSON: a change
	// encodes the pod it changed, not every pod of the node again.
	encoded map[types.UID][]byte
	dirMade bool
}

// checkpoint is the file's format.
type checkpoint struct {
	Pods map[types.UID]map[string]v1.ResourceRequirements `json:"pods"`
}

// OpenStore loads the checkpoint at path ("" keeps it in memory only). An
// unreadable checkpoint is an error: silently forgetting allocations would
// restart resized containers with their old resources.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, pods: map[types.UID]map[string]v1.ResourceRequirements{}, encoded: map[types.UID][]byte{}}
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

// Has reports whether the pod has resources recorded.
func (s *Store) Has(uid types.UID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.pods[uid]
	return ok
}

// read calls f with the pod's resources under the read lock, when it has
// any; f must not keep or change them.
func (s *Store) read(uid types.UID, f func(map[string]v1.ResourceRequirements)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.pods[uid]; ok {
		f(p)
	}
}

// SetPod replaces the pod's resources.
func (s *Store) SetPod(uid types.UID, rs map[string]v1.ResourceRequirements) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.pods[uid]; ok && equality.Semantic.DeepEqual(old, rs) {
		return nil
	}
	s.pods[uid] = rs
	return s.saveLocked(uid)
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
	return s.saveLocked(uid)
}

// RemoveOrphans forgets the pods keep does not claim.
func (s *Store) RemoveOrphans(keep func(types.UID) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
			delete(s.encoded, uid)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.saveLocked()
}

// saveLocked writes the checkpoint, encoding again only the changed pods.
func (s *Store) saveLocked(changed ...types.UID) error {
	if s.path == "" {
		return nil
	}
	for _, uid := range changed {
		delete(s.encoded, uid)
	}
	b, err := s.encodeLocked()
	if err != nil {
		return err
	}
	if !s.dirMade {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
			return err
		}
		s.dirMade = true
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// encodeLocked is the checkpoint's bytes: what json.Marshal makes of
// checkpoint{Pods: s.pods} (keys sorted), assembled from each pod's
// member ("uid":{...}), which is encoded once per change of the pod.
func (s *Store) encodeLocked() ([]byte, error) {
	uids := make([]string, 0, len(s.pods))
	size := len(`{"pods":{}}`)
	for uid, rs := range s.pods {
		member, ok := s.encoded[uid]
		if !ok {
			key, err := json.Marshal(string(uid))
			if err != nil {
				return nil, err
			}
			value, err := json.Marshal(rs)
			if err != nil {
				return nil, err
			}
			member = append(append(key, ':'), value...)
			s.encoded[uid] = member
		}
		uids = append(uids, string(uid))
		size += len(member) + 1
	}
	sort.Strings(uids)
	b := make([]byte, 0, size)
	b = append(b, `{"pods":{`...)
	for i, uid := range uids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s.encoded[types.UID(uid)]...)
	}
	return append(b, `}}`...), nil
}
