package objects

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// Kind is the kind of object a pod may reference.
type Kind string

const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
	// ClusterTrustBundle is cluster-scoped: its Ref has no namespace. It
	// is read through TrustBundles, never listed by References.
	ClusterTrustBundle Kind = "ClusterTrustBundle"
)

// Ref names one referenced object.
type Ref struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return string(r.Kind) + " " + r.Name
	}
	return string(r.Kind) + " " + r.Namespace + "/" + r.Name
}

// References lists the ConfigMaps and Secrets a pod references: volumes
// (configMap, secret, projected sources), env and envFrom of every
// container (init, app, ephemeral), and imagePullSecrets. These are the
// objects the Node authorizer lets this node read for the pod. Sorted,
// without duplicates.
func References(pod *v1.Pod) []Ref {
	set := map[Ref]bool{}
	add := func(k Kind, name string) {
		if name != "" {
			set[Ref{Kind: k, Namespace: pod.Namespace, Name: name}] = true
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(Secret, s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			add(Secret, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(ConfigMap, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add(Secret, s.Secret.Name)
				}
			}
		}
	}
	env := func(c *v1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(ConfigMap, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(Secret, e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(ConfigMap, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(Secret, r.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		env(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		env(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		env(&c)
	}
	out := make([]Ref, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
