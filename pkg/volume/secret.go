package volume

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
)

// secret: the keys of a Secret as files (or the listed items), on a tmpfs
// so they never reach the disk, read-only in containers and rewritten
// when the Secret changes.
type secret struct {
	src *v1.SecretVolumeSource
}

func (c *secret) kind() string      { return "secret" }
func (c *secret) describe() string  { return fmt.Sprintf("secret %q", c.src.SecretName) }
func (c *secret) pluginDir() string { return dirSecret }
func (c *secret) readOnly() bool    { return true }
func (c *secret) refreshed() bool   { return true }

func (c *secret) setUp(ctx context.Context, s *setup) (string, error) {
	optional := c.src.Optional != nil && *c.src.Optional
	payload, err := secretFiles(ctx, s, c.src.SecretName, c.src.Items, s.defaults(c.src.DefaultMode, c.src.DefaultUser), optional)
	if err != nil {
		return "", err
	}
	if err := s.makeDir(true, 0); err != nil {
		return "", err
	}
	return s.dir, s.writeFiles(ctx, payload)
}

// secretFiles reads a Secret and turns it into files; an optional Secret
// that does not exist gives none.
func secretFiles(ctx context.Context, s *setup, name string, items []v1.KeyToPath, d fileDefaults, optional bool) (map[string]atomicwriter.File, error) {
	if s.m.opts.Objects == nil {
		return nil, errors.New("this kubelet has no access to Secrets")
	}
	sec, err := s.m.opts.Objects.GetSecret(ctx, s.pod.Namespace, name)
	if err != nil {
		if optional && apierrors.IsNotFound(err) {
			return map[string]atomicwriter.File{}, nil
		}
		return nil, err
	}
	return s.keyFiles(items, sec.Data, d, optional, "secret references non-existent secret key")
}
