package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// ensureCopy creates (or brings up to date) one copy in the target.
func (p *Provider) ensureCopy(ctx context.Context, pod *v1.Pod, ns string, c objectCopy) error {
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
		// A token that exists is renewed by the refresher, not here.
		if _, err := p.target.CoreV1().Secrets(ns).Get(ctx, c.target, metav1.GetOptions{}); err == nil {
			return nil
		}
		s, err := p.tokenSecret(ctx, pod.Namespace, pod.Name, pod.UID, c.source, c.audience, c.expiration, meta)
		if err != nil {
			return err
		}
		return p.putSecret(ctx, s)
	}
	return nil
}

// tokenSecret requests a token of the origin's service account, bound to
// the origin pod, and wraps it in a Secret.
func (p *Provider) tokenSecret(ctx context.Context, ns, podName string, podUID types.UID, sa, audience string, expiration int64, meta metav1.ObjectMeta) (*v1.Secret, error) {
	exp := max(expiration, minTokenSeconds)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: podName, UID: podUID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := p.origin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of service account %s/%s: %w", ns, sa, errdefs.FromAPI(err))
	}
	meta.Annotations[AnnotationTokenSA] = sa
	meta.Annotations[AnnotationTokenAudience] = audience
	meta.Annotations[AnnotationTokenExpiration] = strconv.FormatInt(exp, 10)
	meta.Annotations[AnnotationTokenExpiry] = tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)
	return &v1.Secret{ObjectMeta: meta, Type: v1.SecretTypeOpaque, Data: map[string][]byte{tokenKey: []byte(tr.Status.Token)}}, nil
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
// deleted with it.
func (p *Provider) ownCopies(ctx context.Context, tp *v1.Pod, copies []objectCopy) error {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: tp.Name, UID: tp.UID}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{ref}}})
	for _, c := range copies {
		var err error
		switch c.kind {
		case copyConfigMap, copyDownward:
			_, err = p.target.CoreV1().ConfigMaps(tp.Namespace).Patch(ctx, c.target, types.MergePatchType, patch, metav1.PatchOptions{})
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

// refreshTokens renews the token copies past 80% of their lifetime.
func (p *Provider) refreshTokens(ctx context.Context) {
	log := klog.FromContext(ctx)
	sel := labels.SelectorFromSet(labels.Set{LabelNode: nodeLabelValue(p.node), LabelCopy: copyToken}).String()
	list, err := p.target.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		log.Error(err, "Listing token copies to renew")
		return
	}
	now := time.Now()
	for i := range list.Items {
		s := &list.Items[i]
		exp, _ := strconv.ParseInt(s.Annotations[AnnotationTokenExpiration], 10, 64)
		expiry, err := time.Parse(time.RFC3339, s.Annotations[AnnotationTokenExpiry])
		if err != nil || exp <= 0 {
			continue
		}
		if now.Before(expiry.Add(-time.Duration(exp) * time.Second / 5)) {
			continue
		}
		meta := metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: s.Labels, Annotations: map[string]string{}}
		for k, v := range s.Annotations {
			meta.Annotations[k] = v
		}
		fresh, err := p.tokenSecret(ctx, s.Annotations[AnnotationOriginNamespace], s.Annotations[AnnotationOriginName],
			types.UID(s.Labels[LabelOriginUID]), s.Annotations[AnnotationTokenSA], s.Annotations[AnnotationTokenAudience], exp, meta)
		if err != nil {
			log.Error(err, "Renewing a service account token copy", "secret", klog.KObj(s))
			continue
		}
		if err := p.putSecret(ctx, fresh); err != nil {
			log.Error(err, "Renewing a service account token copy", "secret", klog.KObj(s))
		}
	}
}
