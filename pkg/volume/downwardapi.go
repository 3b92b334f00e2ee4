package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/fieldpath"
	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
)

// downwardAPI: pod fields and container resources as files, on a tmpfs,
// read-only in containers and rewritten when the pod's labels or
// annotations change.
type downwardAPI struct {
	src *v1.DownwardAPIVolumeSource
}

func (d *downwardAPI) kind() string      { return "downwardAPI" }
func (d *downwardAPI) describe() string  { return "downwardAPI" }
func (d *downwardAPI) pluginDir() string { return dirDownwardAPI }
func (d *downwardAPI) readOnly() bool    { return true }
func (d *downwardAPI) refreshed() bool   { return true }

func (d *downwardAPI) setUp(ctx context.Context, s *setup) (string, error) {
	payload, err := downwardFiles(s, d.src.Items, s.defaults(d.src.DefaultMode, d.src.DefaultUser))
	if err != nil {
		return "", err
	}
	if err := s.makeDir(true, 0); err != nil {
		return "", err
	}
	return s.dir, s.writeFiles(ctx, payload)
}

// downwardFiles resolves every item, with the volume's defaults unless an
// item sets its own mode or user; all failures are reported together.
func downwardFiles(s *setup, items []v1.DownwardAPIVolumeFile, d fileDefaults) (map[string]atomicwriter.File, error) {
	out := map[string]atomicwriter.File{}
	var errs []error
	for _, it := range items {
		f := atomicwriter.File{Mode: d.mode, Owner: s.owner(it.User, d, nil)}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		switch {
		case it.FieldRef != nil:
			v, err := fieldpath.PodField(s.pod, it.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", it.Path, err))
				continue
			}
			f.Data = []byte(v)
		case it.ResourceFieldRef != nil:
			v, err := fieldpath.ContainerResource(s.pod, nil, it.ResourceFieldRef, s.m.opts.NodeAllocatable())
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", it.Path, err))
				continue
			}
			f.Data = []byte(v)
		default:
			errs = append(errs, fmt.Errorf("%s: neither fieldRef nor resourceFieldRef", it.Path))
			continue
		}
		out[filepath.Clean(it.Path)] = f
	}
	return out, errors.Join(errs...)
}
