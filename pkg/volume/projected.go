package volume

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
)

// projected: ConfigMaps, Secrets, downward API fields and service account
// tokens merged into one directory, on a tmpfs, read-only in containers.
// It is rewritten when a source changes, and periodically, which renews
// the token before it expires (the token cache decides when: at 80% of its
// lifetime or after 24 hours).
type projected struct {
	src *v1.ProjectedVolumeSource
}

func (p *projected) kind() string      { return "projected" }
func (p *projected) describe() string  { return "projected" }
func (p *projected) pluginDir() string { return dirProjected }
func (p *projected) readOnly() bool    { return true }
func (p *projected) refreshed() bool   { return true }

func (p *projected) setUp(ctx context.Context, s *setup) (string, error) {
	payload, err := p.files(ctx, s)
	if err != nil {
		return "", err
	}
	if err := s.makeDir(true, 0); err != nil {
		return "", err
	}
	return s.dir, s.writeFiles(ctx, payload)
}

func (p *projected) files(ctx context.Context, s *setup) (map[string]atomicwriter.File, error) {
	mode := defaultMode(p.src.DefaultMode)
	out := map[string]atomicwriter.File{}
	var errs []error
	merge := func(files map[string]atomicwriter.File, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, v := range files {
			out[k] = v
		}
	}
	for i, src := range p.src.Sources {
		switch {
		case src.ConfigMap != nil:
			optional := src.ConfigMap.Optional != nil && *src.ConfigMap.Optional
			merge(configMapFiles(ctx, s, src.ConfigMap.Name, src.ConfigMap.Items, mode, optional))
		case src.Secret != nil:
			optional := src.Secret.Optional != nil && *src.Secret.Optional
			merge(secretFiles(ctx, s, src.Secret.Name, src.Secret.Items, mode, optional))
		case src.DownwardAPI != nil:
			merge(downwardFiles(s, src.DownwardAPI.Items, mode))
		case src.ServiceAccountToken != nil:
			merge(p.token(ctx, s, src.ServiceAccountToken, mode))
		case src.ClusterTrustBundle != nil:
			errs = append(errs, fmt.Errorf("source %d: clusterTrustBundle projections are not supported by this node", i))
		case src.PodCertificate != nil:
			errs = append(errs, fmt.Errorf("source %d: podCertificate projections are not supported by this node", i))
		default:
			errs = append(errs, fmt.Errorf("source %d: no known projection", i))
		}
	}
	return out, errors.Join(errs...)
}

// token requests a token of the pod's service account, bound to the pod.
// With an fsGroup or a common run-as user the file is 0600 and owned by
// that user, its group access coming from the fsGroup ownership (0640), as
// upstream.
func (p *projected) token(ctx context.Context, s *setup, t *v1.ServiceAccountTokenProjection, mode int32) (map[string]atomicwriter.File, error) {
	if s.m.opts.Tokens == nil {
		return nil, errors.New("this kubelet cannot request service account tokens")
	}
	var audiences []string
	if t.Audience != "" {
		audiences = []string{t.Audience}
	}
	exp := t.ExpirationSeconds
	if exp == nil {
		d := int64(3600)
		exp = &d
	}
	sa := s.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := s.m.opts.Tokens.GetServiceAccountToken(ctx, s.pod.Namespace, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: s.pod.Name, UID: s.pod.UID},
		},
	})
	if err != nil {
		return nil, err
	}
	if s.fsUser != nil || s.fsGroup != nil {
		mode = 0o600
	}
	return map[string]atomicwriter.File{t.Path: {Data: []byte(tr.Status.Token), Mode: mode, Owner: s.fsUser}}, nil
}
