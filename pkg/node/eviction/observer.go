package eviction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gokubelet/kubelet/pkg/node/signals"
)

// HostObserver observes a real node's signals (see package signals for how
// each is computed).
type HostObserver struct {
	// MemoryRoot is the root memory cgroup's directory.
	MemoryRoot string
	// Kubepods is the pods' memory cgroup directory and Allocatable the
	// node allocatable memory it is measured against; without them there is
	// no allocatableMemory.available.
	Kubepods    string
	Allocatable func() int64
	// RootDir is on the node filesystem (the kubelet's root directory).
	RootDir string
	// ImageFs gives a path on the runtime's image filesystem; nil or
	// failing means images share the node filesystem.
	ImageFs func(ctx context.Context) (string, error)

	mu        sync.Mutex
	imagePath string
}

// Observe measures every signal it can; it fails only when nothing could
// be measured.
func (h *HostObserver) Observe(ctx context.Context) (Observations, bool, error) {
	obs := Observations{}
	var errs []error
	if mem, err := signals.NodeMemory(h.MemoryRoot); err == nil {
		obs[MemoryAvailable] = Observation{Available: mem.Available(), Capacity: mem.Capacity, Time: mem.Time}
	} else {
		errs = append(errs, fmt.Errorf("memory: %w", err))
	}
	if h.Kubepods != "" && h.Allocatable != nil {
		if alloc := h.Allocatable(); alloc > 0 {
			if ws, err := signals.CgroupWorkingSet(h.Kubepods); err == nil {
				a := alloc - ws
				if a < 0 {
					a = 0
				}
				obs[AllocatableMemoryAvailable] = Observation{Available: a, Capacity: alloc, Time: time.Now()}
			} else {
				errs = append(errs, fmt.Errorf("allocatable memory: %w", err))
			}
		}
	}
	nodefs, err := signals.Statfs(h.RootDir)
	if err == nil {
		obs[NodeFsAvailable] = Observation{Available: nodefs.Available, Capacity: nodefs.Capacity, Time: nodefs.Time}
		obs[NodeFsInodesFree] = Observation{Available: nodefs.InodesFree, Capacity: nodefs.Inodes, Time: nodefs.Time}
	} else {
		errs = append(errs, fmt.Errorf("nodefs: %w", err))
	}
	dedicated := false
	imagefs, imgErr := h.imageFs(ctx)
	if imgErr == nil {
		dedicated = err == nil && imagefs.Device != nodefs.Device
		obs[ImageFsAvailable] = Observation{Available: imagefs.Available, Capacity: imagefs.Capacity, Time: imagefs.Time}
		obs[ImageFsInodesFree] = Observation{Available: imagefs.InodesFree, Capacity: imagefs.Inodes, Time: imagefs.Time}
	} else if err == nil {
		// The runtime did not say: images are taken to share nodefs.
		obs[ImageFsAvailable] = obs[NodeFsAvailable]
		obs[ImageFsInodesFree] = obs[NodeFsInodesFree]
	}
	if o, ok := obs[ImageFsAvailable]; ok {
		obs[ContainerFsAvailable] = o
		obs[ContainerFsInodesFree] = obs[ImageFsInodesFree]
	}
	if p, err := signals.NodePIDs(); err == nil {
		obs[PIDAvailable] = Observation{Available: p.Available(), Capacity: p.Max, Time: p.Time}
	} else {
		errs = append(errs, fmt.Errorf("pids: %w", err))
	}
	if len(obs) == 0 {
		return nil, false, errors.Join(errs...)
	}
	return obs, dedicated, nil
}

func (h *HostObserver) imageFs(ctx context.Context) (signals.FS, error) {
	if h.ImageFs == nil {
		return signals.FS{}, errors.New("no image filesystem")
	}
	h.mu.Lock()
	p := h.imagePath
	h.mu.Unlock()
	if p != "" {
		if fs, err := signals.Statfs(p); err == nil {
			return fs, nil
		}
	}
	p, err := h.ImageFs(ctx)
	if err != nil {
		return signals.FS{}, err
	}
	fs, err := signals.Statfs(p)
	if err != nil {
		return signals.FS{}, err
	}
	h.mu.Lock()
	h.imagePath = p
	h.mu.Unlock()
	return fs, nil
}
