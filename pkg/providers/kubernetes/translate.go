package kubernetes

import (
	"fmt"
	"hash/fnv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/fieldpath"
)

// Labels and annotations on every object the provider makes in the target
// cluster. They narrow the provider's informer and tell humans whose copy
// an object is; they are never proof of it (anyone with write access to
// the target namespace can set them): the provider's own records are
// (owned.go).
const (
	LabelNode      = "gokubelet.io/virtual-node"
	LabelOriginUID = "gokubelet.io/origin-uid"
	LabelCopy      = "gokubelet.io/copy-of"
	LabelManaged   = "gokubelet.io/managed-by"

	AnnotationOriginNamespace = "gokubelet.io/origin-namespace"
	AnnotationOriginName      = "gokubelet.io/origin-name"
	// AnnotationTokenExpiry tells humans when a token copy expires; the
	// provider keeps its own record and never reads it back.
	AnnotationTokenExpiry = "gokubelet.io/token-expires"

	// taintKey is the virtual node taint: tolerations of it are not
	// copied, so a copy never lands on a virtual node (no loops).
	taintKey = "virtual-kubelet.io/provider"
	// tokenKey is the key of a service account token copy.
	tokenKey = "token"
)

// The kinds of copies.
const (
	copyConfigMap = "configmap"
	copySecret    = "secret"
	copyToken     = "token"
	copyDownward  = "downward"
)

// objectCopy is one object the target pod needs: a copy of an origin
// ConfigMap or Secret, a service account token, or the downward API
// values of the origin pod.
type objectCopy struct {
	kind string
	// source is the origin ConfigMap or Secret (kind configmap, secret),
	// or the service account (token).
	source   string
	target   string
	optional bool
	// token: the projection's audience and expiration.
	audience   string
	expiration int64
	// downward: the values.
	data map[string]string
}

// plan is what CreatePod makes in the target: the copies, then the pod.
type plan struct {
	pod    *v1.Pod
	copies []objectCopy
}

// nodeLabelValue is the virtual-node label's value: the node name, or a
// hash of it when it is longer than a label value may be.
func nodeLabelValue(node string) string {
	if len(node) <= 63 {
		return node
	}
	return node[:50] + "-" + shortHash(node)
}

func shortHash(parts ...string) string {
	h := fnv.New32a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// copyName names a copy: the origin name and a hash of the pod, kind and
// name, so copies of different pods never collide.
func copyName(uid types.UID, kind, name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	base := b.String()
	if len(base) > 200 {
		base = base[:200]
	}
	base = strings.Trim(base, "-.")
	if base == "" {
		base = kind
	}
	return base + "-" + shortHash(string(uid), kind, name)
}

// toTarget plans the target pod for an origin pod (pure). The target pod
// keeps the origin's name, lives in the mapped namespace, carries the
// owner labels, and is stripped of what only makes sense in the origin
// cluster: node binding and scheduling constraints, the virtual node
// toleration, priority, readiness gates, ephemeral containers, its service
// account (the origin's token is projected from a copy instead).
// References to ConfigMaps and Secrets are renamed to the copies, and
// fieldRef items of downward API volumes become a copy of their values.
func toTarget(pod *v1.Pod, node, ns string) (*plan, error) {
	p := &plan{}
	seen := map[string]int{}
	add := func(c objectCopy) string {
		k := c.kind + "/" + c.source + "/" + c.target
		if i, ok := seen[k]; ok {
			p.copies[i].optional = p.copies[i].optional && c.optional
			return p.copies[i].target
		}
		seen[k] = len(p.copies)
		p.copies = append(p.copies, c)
		return c.target
	}
	cm := func(name string, optional *bool) string {
		return add(objectCopy{kind: copyConfigMap, source: name, target: copyName(pod.UID, copyConfigMap, name), optional: optional != nil && *optional})
	}
	secret := func(name string, optional *bool) string {
		return add(objectCopy{kind: copySecret, source: name, target: copyName(pod.UID, copySecret, name), optional: optional != nil && *optional})
	}

	if len(pod.Spec.ResourceClaims) > 0 {
		return nil, errdefs.Invalid(fmt.Errorf("pod %s/%s: resource claims are not supported by the kubernetes provider", pod.Namespace, pod.Name))
	}
	spec := pod.Spec.DeepCopy()
	spec.NodeName = ""
	spec.NodeSelector = nil
	spec.Affinity = nil
	spec.SchedulerName = ""
	spec.Priority, spec.PriorityClassName, spec.PreemptionPolicy = nil, "", nil
	spec.RuntimeClassName, spec.Overhead = nil, nil
	spec.TopologySpreadConstraints = nil
	spec.ReadinessGates = nil
	spec.SchedulingGates = nil
	spec.EphemeralContainers = nil
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "", ""
	spec.AutomountServiceAccountToken = ptrTo(false)
	spec.EnableServiceLinks = ptrTo(false) // the origin's service variables are in env already
	var tolerations []v1.Toleration
	for _, t := range spec.Tolerations {
		if t.Key != taintKey {
			tolerations = append(tolerations, t)
		}
	}
	spec.Tolerations = tolerations

	for i := range spec.ImagePullSecrets {
		spec.ImagePullSecrets[i].Name = secret(spec.ImagePullSecrets[i].Name, nil)
	}
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil, vol.Ephemeral != nil:
			return nil, errdefs.Invalid(fmt.Errorf("pod %s/%s: volume %q: persistent volume claims are not supported by the kubernetes provider", pod.Namespace, pod.Name, vol.Name))
		case vol.ConfigMap != nil:
			vol.ConfigMap.Name = cm(vol.ConfigMap.Name, vol.ConfigMap.Optional)
		case vol.Secret != nil:
			vol.Secret.SecretName = secret(vol.Secret.SecretName, vol.Secret.Optional)
		case vol.DownwardAPI != nil:
			sources, err := downwardSources(pod, vol.Name, vol.DownwardAPI.Items, add)
			if err != nil {
				return nil, err
			}
			vol.VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: sources, DefaultMode: vol.DownwardAPI.DefaultMode}}
		case vol.Projected != nil:
			var sources []v1.VolumeProjection
			for _, src := range vol.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					src.ConfigMap.Name = cm(src.ConfigMap.Name, src.ConfigMap.Optional)
					sources = append(sources, src)
				case src.Secret != nil:
					src.Secret.Name = secret(src.Secret.Name, src.Secret.Optional)
					sources = append(sources, src)
				case src.ServiceAccountToken != nil:
					sa := pod.Spec.ServiceAccountName
					if sa == "" {
						sa = "default"
					}
					exp := int64(3600)
					if src.ServiceAccountToken.ExpirationSeconds != nil {
						exp = *src.ServiceAccountToken.ExpirationSeconds
					}
					name := add(objectCopy{kind: copyToken, source: sa, target: copyName(pod.UID, copyToken, vol.Name+"/"+src.ServiceAccountToken.Path),
						audience: src.ServiceAccountToken.Audience, expiration: exp})
					sources = append(sources, v1.VolumeProjection{Secret: &v1.SecretProjection{
						LocalObjectReference: v1.LocalObjectReference{Name: name},
						Items:                []v1.KeyToPath{{Key: tokenKey, Path: src.ServiceAccountToken.Path}},
					}})
				case src.DownwardAPI != nil:
					more, err := downwardSources(pod, vol.Name, src.DownwardAPI.Items, add)
					if err != nil {
						return nil, err
					}
					sources = append(sources, more...)
				default:
					return nil, errdefs.Invalid(fmt.Errorf("pod %s/%s: volume %q: this projected source is not supported by the kubernetes provider", pod.Namespace, pod.Name, vol.Name))
				}
			}
			vol.Projected.Sources = sources
		}
	}
	renameEnv := func(list []v1.Container) {
		for i := range list {
			c := &list[i]
			for j := range c.Env {
				if vf := c.Env[j].ValueFrom; vf != nil {
					if vf.ConfigMapKeyRef != nil {
						vf.ConfigMapKeyRef.Name = cm(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Optional)
					}
					if vf.SecretKeyRef != nil {
						vf.SecretKeyRef.Name = secret(vf.SecretKeyRef.Name, vf.SecretKeyRef.Optional)
					}
				}
			}
			for j := range c.EnvFrom {
				if r := c.EnvFrom[j].ConfigMapRef; r != nil {
					r.Name = cm(r.Name, r.Optional)
				}
				if r := c.EnvFrom[j].SecretRef; r != nil {
					r.Name = secret(r.Name, r.Optional)
				}
			}
		}
	}
	renameEnv(spec.InitContainers)
	renameEnv(spec.Containers)

	labels := map[string]string{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[LabelNode] = nodeLabelValue(node)
	labels[LabelOriginUID] = string(pod.UID)
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		if !strings.HasPrefix(k, "kubernetes.io/config.") && k != v1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	annotations[AnnotationOriginNamespace] = pod.Namespace
	annotations[AnnotationOriginName] = pod.Name
	p.pod = &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns, Labels: labels, Annotations: annotations},
		Spec:       *spec,
	}
	return p, nil
}

// downwardSources turns downward API items into projected sources: the
// fieldRef items (the origin pod's name, namespace, UID, labels and
// annotations, which differ in the target) become a copy of their values
// (fieldpath.PodField, as a downwardAPI volume on a CRI node shows them);
// resourceFieldRef items stay (the target resolves the same limits).
func downwardSources(pod *v1.Pod, volName string, items []v1.DownwardAPIVolumeFile, add func(objectCopy) string) ([]v1.VolumeProjection, error) {
	data := map[string]string{}
	var mapped []v1.KeyToPath
	var keep []v1.DownwardAPIVolumeFile
	for i, it := range items {
		if it.FieldRef == nil {
			keep = append(keep, it)
			continue
		}
		v, err := fieldpath.PodField(pod, it.FieldRef.FieldPath)
		if err != nil {
			return nil, errdefs.Invalid(fmt.Errorf("pod %s/%s: volume %q: %w", pod.Namespace, pod.Name, volName, err))
		}
		key := fmt.Sprintf("item-%d", i)
		data[key] = v
		mapped = append(mapped, v1.KeyToPath{Key: key, Path: it.Path, Mode: it.Mode})
	}
	var out []v1.VolumeProjection
	if len(data) > 0 {
		name := add(objectCopy{kind: copyDownward, source: volName, target: copyName(pod.UID, copyDownward, volName), data: data})
		out = append(out, v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: name}, Items: mapped}})
	}
	if len(keep) > 0 {
		out = append(out, v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: keep}})
	}
	return out, nil
}

// fromTarget is the origin's view of a target pod the provider created:
// the origin's namespace, name and UID from the provider's record (never
// from the target pod's labels or annotations, which the target's tenants
// can write), the target's status (phase, conditions, container states,
// pod IPs). The host IP is left to the virtual node (its own address).
func fromTarget(tp *v1.Pod, rec *ownedPod, node string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              rec.OriginName,
			Namespace:         rec.OriginNamespace,
			UID:               rec.OriginUID,
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			CreationTimestamp: tp.CreationTimestamp,
			DeletionTimestamp: tp.DeletionTimestamp,
		},
		Spec:   *tp.Spec.DeepCopy(),
		Status: *tp.Status.DeepCopy(),
	}
	for k, v := range tp.Labels {
		if k != LabelNode && k != LabelOriginUID {
			p.Labels[k] = v
		}
	}
	for k, v := range tp.Annotations {
		if k != AnnotationOriginName && k != AnnotationOriginNamespace {
			p.Annotations[k] = v
		}
	}
	p.Spec.NodeName = node
	p.Status.HostIP, p.Status.HostIPs = "", nil
	p.Status.NominatedNodeName = ""
	p.Status.ObservedGeneration = 0
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].ObservedGeneration = 0
	}
	return p
}

// markGone is the last status of a pod deleted from the target: a
// container it last showed running has stopped, its exit unknown.
func markGone(p *v1.Pod) {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].State.Terminated == nil {
				list[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown",
					Message: "The container's final state is not known: its pod was deleted in the target cluster",
				}}
				list[i].Ready = false
			}
		}
	}
	if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
		p.Status.Phase = v1.PodFailed
	}
}

func ptrTo[T any](v T) *T { return &v }
