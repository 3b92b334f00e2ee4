package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// minTokenSeconds is the shortest token the API server issues.
const minTokenSeconds = 600

// copyMeta is the metadata of a copy for pod.
func (p *Provider) copyMeta(pod *v1.Pod, ns string, c objectCopy) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: c.target, Namespace: ns,
		Labels: map[string]string{LabelNode: nodeLabelValue(p.node), LabelOriginUID: string(pod.UID), LabelCopy: c.kind},
		Annotations: map[string]string{
			AnnotationOriginNamespace: pod.Namespace,
			AnnotationOriginName:      pod.Name,
		},
	}
}

// ensureCopy creates (or brings up to date) one copy in the target; token
// copies are recorded in o.
func (p *Provider) ensureCopy(ctx context.Context, pod *v1.Pod, ns string, c objectCopy, o *ownedPod) error {
	meta := p.copyMeta(pod, ns, c)
	switch c.kind {
	case copyConfigMap, copyDownward:
		var data map[string]string
		var binary map[string][]byte
		if c.kind == copyDownward {
			data = c.data
		} else {
			src, err := p.objects.GetConfigMap(ctx, pod.Namespace, c.source)
			if errdefs.IsNotFound(err) && c.optional {
				return nil
			}
			if err != nil {
				return fmt.Errorf("copying configmap %s/%s: %w", pod.Namespace, c.source, err)
			}
			data, binary = src.Data, src.BinaryData
		}
		return p.putConfigMap(ctx, &v1.ConfigMap{ObjectMeta: meta, Data: data, BinaryData: binary})
	case copySecret:
		src, err := p.objects.GetSecret(ctx, pod.Namespace, c.source)
		if errdefs.IsNotFound(err) && c.optional {
			return nil
		}
		if err != nil {
			return fmt.Errorf("copying secret %s/%s: %w", pod.Namespace, c.source, err)
		}
		typ := src.Type
		if typ == v1.SecretTypeServiceAccountToken {
			typ = v1.SecretTypeOpaque // the target would try to fill it in
		}
		return p.putSecret(ctx, &v1.Secret{ObjectMeta: meta, Data: src.Data, Type: typ})
	case copyToken:
		return p.ensureToken(ctx, ns, c, meta, o)
	}
	return nil
}

// ensureToken creates a token copy the record does not have yet. A token
// that exists (same Secret UID) is renewed by RefreshTokens, not here; a
// Secret of that name the provider did not create is never written to.
func (p *Provider) ensureToken(ctx context.Context, ns string, c objectCopy, meta metav1.ObjectMeta, o *ownedPod) error {
	api := p.target.CoreV1().Secrets(ns)
	p.mu.Lock()
	rec := *o
	var have types.UID
	if t := o.token(c.target); t != nil {
		have = t.SecretUID
	}
	p.mu.Unlock()
	if have != "" {
		cur, err := api.Get(ctx, c.target, metav1.GetOptions{})
		switch {
		case err == nil && cur.UID == have:
			return nil
		case err == nil:
			return errdefs.Retryable(fmt.Errorf("target secret %s/%s was replaced by someone else; no token is written into it", ns, c.target))
		case !apierrors.IsNotFound(err):
			return wrapCopy("secret", ns, c.target, err)
		}
	}
	token, expiry, exp, err := p.mintToken(ctx, &rec, c.audience, c.expiration)
	if err != nil {
		return err
	}
	meta.Annotations[AnnotationTokenExpiry] = expiry.UTC().Format(time.RFC3339)
	created, err := api.Create(ctx, &v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Data: map[string][]byte{tokenKey: token}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return errdefs.Retryable(fmt.Errorf("target secret %s/%s exists and was not created by virtual node %s; no token is written into it", ns, c.target, p.node))
	}
	if err != nil {
		return wrapCopy("secret", ns, c.target, err)
	}
	p.mu.Lock()
	if t := o.token(c.target); t != nil {
		t.SecretUID, t.Expiry = created.UID, expiry
	} else {
		o.Tokens = append(o.Tokens, ownedToken{Secret: c.target, SecretUID: created.UID, Audience: c.audience, ExpirationSeconds: exp, Expiry: expiry})
	}
	p.mu.Unlock()
	return nil
}

// mintToken requests a token of the origin pod's service account, bound
// to the origin pod by name and UID, both from the provider's record
// (never from the target). It returns the token, its expiry and the
// lifetime asked for.
func (p *Provider) mintToken(ctx context.Context, rec *ownedPod, audience string, expiration int64) ([]byte, time.Time, int64, error) {
	if rec.OriginUID == "" || rec.OriginName == "" || rec.ServiceAccount == "" {
		return nil, time.Time{}, 0, errdefs.Invalid(fmt.Errorf("no token for pod %s/%s: its name, UID or service account is unknown", rec.OriginNamespace, rec.OriginName))
	}
	exp := max(expiration, minTokenSeconds)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: rec.OriginName, UID: rec.OriginUID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := p.origin.CoreV1().ServiceAccounts(rec.OriginNamespace).CreateToken(ctx, rec.ServiceAccount, req, metav1.CreateOptions{})
	if err != nil {
		return nil, time.Time{}, 0, fmt.Errorf("requesting a token of service account %s/%s for pod %s: %w", rec.OriginNamespace, rec.ServiceAccount, rec.OriginName, errdefs.FromAPI(err))
	}
	return []byte(tr.Status.Token), tr.Status.ExpirationTimestamp.Time, exp, nil
}

// ours reports whether a target object is this node's.
func (p *Provider) ours(m metav1.Object) bool {
	return m.GetLabels()[LabelNode] == nodeLabelValue(p.node)
}

func (p *Provider) putConfigMap(ctx context.Context, cm *v1.ConfigMap) error {
	api := p.target.CoreV1().ConfigMaps(cm.Namespace)
	_, err := api.Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return wrapCopy("configmap", cm.Namespace, cm.Name, err)
	}
	cur, err := api.Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		return wrapCopy("configmap", cm.Namespace, cm.Name, err)
	}
	if !p.ours(cur) {
		return errdefs.Terminal(fmt.Errorf("target configmap %s/%s exists and is not managed by virtual node %s", cm.Namespace, cm.Name, p.node))
	}
	if apiequality.Semantic.DeepEqual(cur.Data, cm.Data) && apiequality.Semantic.DeepEqual(cur.BinaryData, cm.BinaryData) {
		return nil
	}
	cur.Data, cur.BinaryData = cm.Data, cm.BinaryData
	_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
	return wrapCopy("configmap", cm.Namespace, cm.Name, err)
}

func (p *Provider) putSecret(ctx context.Context, s *v1.Secret) error {
	api := p.target.CoreV1().Secrets(s.Namespace)
	_, err := api.Create(ctx, s, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return wrapCopy("secret", s.Namespace, s.Name, err)
	}
	cur, err := api.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return wrapCopy("secret", s.Namespace, s.Name, err)
	}
	if !p.ours(cur) {
		return errdefs.Terminal(fmt.Errorf("target secret %s/%s exists and is not managed by virtual node %s", s.Namespace, s.Name, p.node))
	}
	if apiequality.Semantic.DeepEqual(cur.Data, s.Data) && apiequality.Semantic.DeepEqual(cur.Annotations, s.Annotations) {
		return nil
	}
	cur.Data, cur.Annotations = s.Data, s.Annotations
	_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
	return wrapCopy("secret", s.Namespace, s.Name, err)
}

func wrapCopy(kind, ns, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("target %s %s/%s: %w", kind, ns, name, errdefs.FromAPI(err))
}

// ownCopies makes the target pod the owner of its copies, so they are
// deleted with it. Token copies are patched with their recorded UID (a
// Secret put in their place is not touched).
func (p *Provider) ownCopies(ctx context.Context, tp *v1.Pod, copies []objectCopy, rec *ownedPod) error {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: tp.Name, UID: tp.UID}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	for _, c := range copies {
		var err error
		switch c.kind {
		case copyConfigMap, copyDownward:
			_, err = p.target.CoreV1().ConfigMaps(tp.Namespace).Patch(ctx, c.target, types.MergePatchType, patch, metav1.PatchOptions{})
		case copyToken:
			t := rec.token(c.target)
			if t == nil {
				continue
			}
			tpatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": t.SecretUID, "ownerReferences": []metav1.OwnerReference{ref}}})
			_, err = p.target.CoreV1().Secrets(tp.Namespace).Patch(ctx, c.target, types.MergePatchType, tpatch, metav1.PatchOptions{})
		default:
			_, err = p.target.CoreV1().Secrets(tp.Namespace).Patch(ctx, c.target, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if apierrors.IsNotFound(err) && c.optional {
			continue
		}
		if err != nil {
			return wrapCopy(c.kind, tp.Namespace, c.target, err)
		}
	}
	return nil
}

// RefreshTokens renews the token copies past 80% of their lifetime (and,
// after a restart, each once: their expiry is not on disk). Start calls it
// every minute. The copies to renew are the provider's records, never a
// list of the target's Secrets: each token is requested for the recorded
// origin pod (name and UID) and service account, and written only into the
// Secret the provider created (same UID), with an optimistic update.
func (p *Provider) RefreshTokens(ctx context.Context) {
	log := klog.FromContext(ctx)
	now := p.now()
	type due struct {
		rec ownedPod
		tok ownedToken
	}
	var todo []due
	p.mu.Lock()
	for _, o := range p.owned {
		if o.TargetUID == "" {
			continue
		}
		for _, t := range o.Tokens {
			if t.Expiry.IsZero() || !now.Before(t.Expiry.Add(-time.Duration(t.ExpirationSeconds)*time.Second/5)) {
				todo = append(todo, due{rec: *o, tok: t})
			}
		}
	}
	p.mu.Unlock()
	for _, d := range todo {
		if err := p.renewToken(ctx, &d.rec, d.tok); err != nil {
			log.Error(err, "Renewing a service account token copy", "pod", klog.KRef(d.rec.OriginNamespace, d.rec.OriginName),
				"secret", klog.KRef(d.rec.TargetNamespace, d.tok.Secret))
		}
	}
}

func (p *Provider) renewToken(ctx context.Context, rec *ownedPod, tok ownedToken) error {
	api := p.target.CoreV1().Secrets(rec.TargetNamespace)
	cur, err := api.Get(ctx, tok.Secret, metav1.GetOptions{})
	if err != nil {
		return wrapCopy("secret", rec.TargetNamespace, tok.Secret, err)
	}
	if cur.UID != tok.SecretUID {
		return fmt.Errorf("target secret %s/%s is not the token copy virtual node %s created (UID %s, want %s); no token is written into it",
			rec.TargetNamespace, tok.Secret, p.node, cur.UID, tok.SecretUID)
	}
	token, expiry, _, err := p.mintToken(ctx, rec, tok.Audience, tok.ExpirationSeconds)
	if err != nil {
		return err
	}
	upd := cur.DeepCopy()
	upd.Data = map[string][]byte{tokenKey: token}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[AnnotationTokenExpiry] = expiry.UTC().Format(time.RFC3339)
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return wrapCopy("secret", rec.TargetNamespace, tok.Secret, err)
	}
	p.mu.Lock()
	if o := p.owned[rec.key()]; o != nil && o.OriginUID == rec.OriginUID {
		if t := o.token(tok.Secret); t != nil && t.SecretUID == tok.SecretUID {
			t.Expiry = expiry
		}
	}
	p.mu.Unlock()
	return nil
}
