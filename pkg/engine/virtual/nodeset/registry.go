package nodeset

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// registry is the record of the Node names this process registered, in a
// file under its root dir that only it writes. Stale-node clean-up
// deletes only names found here. Without a path it is kept in memory.
type registry struct {
	path string

	mu    sync.Mutex
	names []string // in memory when path is ""
}

type registryFile struct {
	Nodes []string `json:"nodes"`
}

func (r *registry) load() ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked()
}

func (r *registry) loadLocked() ([]string, error) {
	if r.path == "" {
		return slices.Clone(r.names), nil
	}
	b, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f registryFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return f.Nodes, nil
}

func (r *registry) storeLocked(names []string) error {
	if r.path == "" {
		r.names = names
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(registryFile{Nodes: names})
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

// add records name (once).
func (r *registry) add(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	names, err := r.loadLocked()
	if err != nil {
		return err
	}
	if slices.Contains(names, name) {
		return nil
	}
	return r.storeLocked(append(names, name))
}

// remove forgets name.
func (r *registry) remove(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	names, err := r.loadLocked()
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		return nil
	}
	return r.storeLocked(slices.DeleteFunc(names, func(n string) bool { return n == name }))
}
