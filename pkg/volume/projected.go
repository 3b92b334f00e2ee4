package volume

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
)

// projected: ConfigMaps, Secrets, downward API fields, service account
// tokens, ClusterTrustBundles' trust anchors and pod certificates merged
// into one directory, on a tmpfs, read-only in containers. It is rewritten
// when a source changes, and periodically, which renews the token before
// it expires (the token cache decides when: at 80% of its lifetime or
// after 24 hours).
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
	d := s.defaults(p.src.DefaultMode, p.src.DefaultUser)
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
			merge(configMapFiles(ctx, s, src.ConfigMap.Name, src.ConfigMap.Items, d, optional))
		case src.Secret != nil:
			optional := src.Secret.Optional != nil && *src.Secret.Optional
			merge(secretFiles(ctx, s, src.Secret.Name, src.Secret.Items, d, optional))
		case src.DownwardAPI != nil:
			merge(downwardFiles(s, src.DownwardAPI.Items, d))
		case src.ServiceAccountToken != nil:
			merge(p.token(ctx, s, src.ServiceAccountToken, d))
		case src.ClusterTrustBundle != nil:
			merge(trustBundleFiles(ctx, s, i, src.ClusterTrustBundle, d))
		case src.PodCertificate != nil:
			merge(podCertificateFiles(ctx, s, i, src.PodCertificate, d))
		default:
			errs = append(errs, fmt.Errorf("source %d: no known projection", i))
		}
	}
	return out, errors.Join(errs...)
}

// trustBundleFiles writes the trust anchors of the ClusterTrustBundles the
// projection selects: one by name, or all of a signer whose labels match.
// The file's mode follows the token's rule (0600 with an fsGroup or a
// common run-as user), as upstream.
func trustBundleFiles(ctx context.Context, s *setup, i int, t *v1.ClusterTrustBundleProjection, d fileDefaults) (map[string]atomicwriter.File, error) {
	tb := s.m.opts.TrustBundles
	if tb == nil {
		return nil, fmt.Errorf("source %d: clusterTrustBundle projections are off on this node (feature gate ClusterTrustBundleProjection)", i)
	}
	optional := t.Optional != nil && *t.Optional
	var data []byte
	var err error
	switch {
	case t.Name != nil:
		data, err = tb.ByName(ctx, *t.Name, optional)
	case t.SignerName != nil:
		data, err = tb.BySigner(ctx, *t.SignerName, t.LabelSelector, optional)
	default:
		err = errors.New("a clusterTrustBundle projection needs a name or a signerName")
	}
	if err != nil {
		return nil, fmt.Errorf("source %d (clusterTrustBundle): %w", i, err)
	}
	owner, mode := s.credential(t.User, d)
	return map[string]atomicwriter.File{t.Path: {Data: data, Mode: mode, Owner: owner}}, nil
}

// podCertificateFiles writes a podCertificate projection's private key and
// certificate chain: at keyPath and certificateChainPath, and both (key
// first) at credentialBundlePath, each where set. Until the signer issued
// the certificate the volume fails and the pod waits; the credential's
// issue or renewal rewrites it. Modes as for a token.
func podCertificateFiles(ctx context.Context, s *setup, i int, pc *v1.PodCertificateProjection, d fileDefaults) (map[string]atomicwriter.File, error) {
	certs := s.m.opts.PodCertificates
	if certs == nil {
		return nil, fmt.Errorf("source %d: podCertificate projections are off on this node (feature gate PodCertificateRequest)", i)
	}
	key, chain, err := certs.CredentialBundle(ctx, s.pod, s.name, i, pc)
	if err != nil {
		return nil, fmt.Errorf("source %d (podCertificate of signer %q): %w", i, pc.SignerName, err)
	}
	owner, mode := s.credential(pc.User, d)
	out := map[string]atomicwriter.File{}
	add := func(path string, data []byte) {
		if path != "" {
			out[path] = atomicwriter.File{Data: data, Mode: mode, Owner: owner}
		}
	}
	add(pc.CredentialBundlePath, append(append([]byte{}, key...), chain...))
	add(pc.KeyPath, key)
	add(pc.CertificateChainPath, chain)
	return out, nil
}

// token requests a token of the pod's service account, bound to the pod.
// With an fsGroup or a common run-as user the file is 0600 and owned by
// that user, its group access coming from the fsGroup ownership (0640), as
// upstream.
func (p *projected) token(ctx context.Context, s *setup, t *v1.ServiceAccountTokenProjection, d fileDefaults) (map[string]atomicwriter.File, error) {
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
	owner, mode := s.credential(t.User, d)
	return map[string]atomicwriter.File{t.Path: {Data: []byte(tr.Status.Token), Mode: mode, Owner: owner}}, nil
}

// credential is the owner and mode of a credential file (a token, trust
// anchors, a pod certificate). Its owner is the item's user, else the
// volume's defaultUser (both with the AtomicWriteVolumeUserFields gate
// on), else the one user all the pod's containers run as. Its mode is the
// owner's only when it has an owner or the pod an fsGroup (whose
// ownership gives the group read access), as upstream.
func (s *setup) credential(user *int64, d fileDefaults) (*int64, int32) {
	owner := s.owner(user, d, s.fsUser)
	if owner != nil || s.fsGroup != nil {
		return owner, 0o600
	}
	return owner, d.mode
}
