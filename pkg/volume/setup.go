package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// setup is what a source's setUp works with.
type setup struct {
	m    *Manager
	pod  *v1.Pod
	name string
	// dir is the volume's directory for types that live in the pod's
	// directory; metaDir holds the plugin's own state for it.
	dir, metaDir string
	// fsGroup and its change policy, from the pod's security context.
	fsGroup       *int64
	fsGroupPolicy *v1.PodFSGroupChangePolicy
	// fsUser is the one uid every container runs as, if they agree.
	fsUser *int64
	// first: the volume was not set up yet in this kubelet's life.
	first bool
}

// fsUser returns the uid all containers of the pod run as, when every one
// sets it (in its own or the pod's security context) and they agree, as
// upstream derives the owner of projected token files.
func fsUser(pod *v1.Pod) *int64 {
	var uid *int64
	agree := true
	visit := func(c *v1.Container) {
		var u *int64
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			u = c.SecurityContext.RunAsUser
		} else if pod.Spec.SecurityContext != nil {
			u = pod.Spec.SecurityContext.RunAsUser
		}
		switch {
		case u == nil:
			agree = false
		case uid == nil:
			uid = u
		case *uid != *u:
			agree = false
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(&c)
	}
	if !agree {
		return nil
	}
	return uid
}

// makeDir creates the volume's directory (mode 0777, as upstream's
// emptyDir) and, for memory-backed volumes, mounts a tmpfs on it unless
// one is there already.
func (s *setup) makeDir(memory bool, sizeBytes int64) error {
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o750); err != nil {
		return err
	}
	if err := os.Mkdir(s.dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if st, err := os.Lstat(s.dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", s.dir)
	} else if st.Mode().Perm() != 0o777 {
		if mounted, _ := hostfs.IsMountPoint(s.dir); !mounted {
			if err := os.Chmod(s.dir, 0o777); err != nil {
				return err
			}
		}
	}
	if !memory {
		return nil
	}
	mounted, err := hostfs.IsMountPoint(s.dir)
	if err != nil || mounted {
		return err
	}
	return hostfs.MountTmpfs(s.dir, sizeBytes)
}

// writeFiles publishes payload into the volume's directory with the
// atomic writer; with an fsGroup, the volume gets its group read-only
// ownership before the new version is published.
func (s *setup) writeFiles(ctx context.Context, payload map[string]atomicwriter.File) error {
	w, err := atomicwriter.New(s.dir)
	if err != nil {
		return err
	}
	var perms func(string) error
	if s.fsGroup != nil {
		gid := *s.fsGroup
		perms = func(string) error { return hostfs.ChangeOwnership(s.dir, gid, true) }
	}
	changed, err := w.Write(payload, perms)
	if err != nil {
		return err
	}
	if changed && !s.first {
		klog.FromContext(ctx).V(2).Info("Volume content updated", "pod", klog.KObj(s.pod), "volume", s.name)
	}
	return nil
}

// keyFiles turns a ConfigMap's or Secret's data into files: every key, or
// only the listed items (a missing key is an error unless optional), with
// the volume's defaults unless an item sets its own mode or user.
func (s *setup) keyFiles(items []v1.KeyToPath, data map[string][]byte, d fileDefaults, optional bool, what string) (map[string]atomicwriter.File, error) {
	out := map[string]atomicwriter.File{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = atomicwriter.File{Data: v, Mode: d.mode, Owner: d.owner}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s", what, it.Key)
		}
		f := atomicwriter.File{Data: v, Mode: d.mode, Owner: s.owner(it.User, d, nil)}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		out[it.Path] = f
	}
	return out, nil
}
