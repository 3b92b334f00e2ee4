package volume

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
)

// configMap: the keys of a ConfigMap as files (or the listed items), on
// the node's disk as upstream (its memory would be charged to no pod),
// read-only in containers and rewritten when the ConfigMap changes.
type configMap struct {
	src *v1.ConfigMapVolumeSource
}

func (c *configMap) kind() string      { return "configMap" }
func (c *configMap) describe() string  { return fmt.Sprintf("configMap %q", c.src.Name) }
func (c *configMap) pluginDir() string { return dirConfigMap }
func (c *configMap) readOnly() bool    { return true }
func (c *configMap) refreshed() bool   { return true }

func (c *configMap) setUp(ctx context.Context, s *setup) (string, error) {
	optional := c.src.Optional != nil && *c.src.Optional
	payload, err := configMapFiles(ctx, s, c.src.Name, c.src.Items, s.defaults(c.src.DefaultMode, c.src.DefaultUser), optional)
	if err != nil {
		return "", err
	}
	if err := s.makeDir(false, 0); err != nil {
		return "", err
	}
	return s.dir, s.writeFiles(ctx, payload)
}

// configMapFiles reads a ConfigMap and turns it into files; an optional
// ConfigMap that does not exist gives none.
func configMapFiles(ctx context.Context, s *setup, name string, items []v1.KeyToPath, d fileDefaults, optional bool) (map[string]atomicwriter.File, error) {
	if s.m.opts.Objects == nil {
		return nil, errors.New("this kubelet has no access to ConfigMaps")
	}
	cm, err := s.m.opts.Objects.GetConfigMap(ctx, s.pod.Namespace, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return map[string]atomicwriter.File{}, nil
		}
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return s.keyFiles(items, data, d, optional, "configmap references non-existent config key")
}
