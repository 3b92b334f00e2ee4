package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// emptyDir: a directory in the pod's directory (mode 0777, or its mode
// with the EmptyDirVolumeMode gate on), or a tmpfs for medium Memory,
// sized by sizeLimit, the pod's memory limit and the node's allocatable
// memory (the smallest). On disk, a sizeLimit is enforced by evicting the
// pod once the volume grows past it. With an fsGroup it gets the group's
// ownership once, when first set up (after the mode, which it overrides); a ready marker in the pod's
// plugins directory (upstream's) makes later set-ups, after a kubelet
// restart too, leave it alone.
type emptyDir struct {
	src *v1.EmptyDirVolumeSource
}

func (e *emptyDir) kind() string      { return "emptyDir" }
func (e *emptyDir) describe() string  { return "emptyDir" }
func (e *emptyDir) pluginDir() string { return dirEmptyDir }
func (e *emptyDir) readOnly() bool    { return false }
func (e *emptyDir) refreshed() bool   { return false }

// diskLimit is the sizeLimit of a disk-backed emptyDir (enforced by
// eviction, see Manager.CheckSizeLimits), or nil.
func (e *emptyDir) diskLimit() *resource.Quantity {
	if e.src.Medium != v1.StorageMediumDefault || e.src.SizeLimit == nil || e.src.SizeLimit.IsZero() {
		return nil
	}
	return e.src.SizeLimit
}

func (e *emptyDir) setUp(ctx context.Context, s *setup) (string, error) {
	memory := false
	switch e.src.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		memory = true
	default:
		return "", fmt.Errorf("emptyDir medium %q is not supported by this node", e.src.Medium)
	}
	ready := filepath.Join(s.metaDir, "ready")
	if _, err := os.Stat(ready); err == nil {
		if st, err := os.Stat(s.dir); err == nil && st.IsDir() {
			mounted, _ := hostfs.IsMountPoint(s.dir)
			if mounted == memory {
				return s.dir, nil
			}
		}
		// The marker outlived the volume (or its mount): set it up anew.
		os.Remove(ready)
	}
	var size int64
	if memory {
		size = memoryVolumeSize(s.pod, e.src.SizeLimit, s.m.opts.NodeAllocatable())
	}
	if err := s.makeDir(memory, size); err != nil {
		return "", err
	}
	if e.src.Mode != nil && s.m.opts.EmptyDirMode {
		// The directory the containers see: a tmpfs's root for medium
		// Memory (upstream chmods the directory under the mount).
		if err := os.Chmod(s.dir, dirMode(*e.src.Mode)); err != nil {
			return "", err
		}
	}
	if s.fsGroup != nil {
		if err := hostfs.ChangeOwnership(s.dir, *s.fsGroup, false); err != nil {
			// As upstream: the volume is usable, only some entries kept
			// their group.
			klog.FromContext(ctx).Error(err, "Setting fsGroup ownership of an emptyDir", "pod", klog.KObj(s.pod), "volume", s.name)
		}
	}
	if err := os.MkdirAll(s.metaDir, 0o750); err != nil {
		return "", err
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return s.dir, nil
}

// dirMode is an emptyDir's mode (0 to 01777, the API validates it) as a
// FileMode: the permission bits and the sticky bit.
func dirMode(mode int32) os.FileMode {
	m := os.FileMode(mode) & os.ModePerm
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

// memoryVolumeSize is the tmpfs size of a memory-backed emptyDir: the
// node's allocatable memory, lowered to the pod's memory limit (when every
// container has one) and to the volume's sizeLimit. 0 means the kernel's
// default.
func memoryVolumeSize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var size int64
	if q, ok := allocatable[v1.ResourceMemory]; ok {
		size = q.Value()
	}
	lower := func(v int64) {
		if v > 0 && (size == 0 || v < size) {
			size = v
		}
	}
	if podHasMemoryLimit(pod) {
		limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
		if q, ok := limits[v1.ResourceMemory]; ok {
			lower(q.Value())
		}
	}
	if sizeLimit != nil {
		lower(sizeLimit.Value())
	}
	return size
}

// podHasMemoryLimit: the pod's memory is bounded only if every container
// (init and app) has a memory limit, or the pod sets one itself.
func podHasMemoryLimit(pod *v1.Pod) bool {
	if pod.Spec.Resources != nil {
		if q, ok := pod.Spec.Resources.Limits[v1.ResourceMemory]; ok && !q.IsZero() {
			return true
		}
	}
	n := 0
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			n++
			if q, ok := c.Resources.Limits[v1.ResourceMemory]; !ok || q.IsZero() {
				return false
			}
		}
	}
	return n > 0
}
