package mirrorpod

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// forbiddenReference names the first field of pod that references another
// API object, which NodeRestriction forbids in a pod a node creates, or
// returns "". Volume plugins' own secret references (CSI, iSCSI, ...) are
// not looked at; the API server still refuses them.
func forbiddenReference(pod *v1.Pod) string {
	s := &pod.Spec
	if s.ServiceAccountName != "" {
		return "a service account (spec.serviceAccountName)"
	}
	if len(s.ImagePullSecrets) > 0 {
		return "secrets (spec.imagePullSecrets)"
	}
	if len(s.ResourceClaims) > 0 {
		return "resource claims (spec.resourceClaims)"
	}
	for i, v := range s.Volumes {
		f := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.Secret != nil:
			return "secrets (" + f + ".secret)"
		case v.ConfigMap != nil:
			return "configmaps (" + f + ".configMap)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims (" + f + ".persistentVolumeClaim)"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (" + f + ".ephemeral)"
		case v.Projected != nil:
			for j, src := range v.Projected.Sources {
				g := fmt.Sprintf("%s.projected.sources[%d]", f, j)
				switch {
				case src.Secret != nil:
					return "secrets (" + g + ".secret)"
				case src.ConfigMap != nil:
					return "configmaps (" + g + ".configMap)"
				case src.ServiceAccountToken != nil:
					return "serviceaccounts (" + g + ".serviceAccountToken)"
				case src.ClusterTrustBundle != nil:
					return "clustertrustbundles (" + g + ".clusterTrustBundle)"
				}
			}
		}
	}
	check := func(kind string, cs []v1.Container) string {
		for i, c := range cs {
			f := fmt.Sprintf("spec.%s[%d]", kind, i)
			for j, e := range c.EnvFrom {
				if e.SecretRef != nil {
					return fmt.Sprintf("secrets (%s.envFrom[%d].secretRef)", f, j)
				}
				if e.ConfigMapRef != nil {
					return fmt.Sprintf("configmaps (%s.envFrom[%d].configMapRef)", f, j)
				}
			}
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if e.ValueFrom.SecretKeyRef != nil {
					return fmt.Sprintf("secrets (%s.env[%d].valueFrom.secretKeyRef)", f, j)
				}
				if e.ValueFrom.ConfigMapKeyRef != nil {
					return fmt.Sprintf("configmaps (%s.env[%d].valueFrom.configMapKeyRef)", f, j)
				}
			}
		}
		return ""
	}
	if r := check("initContainers", s.InitContainers); r != "" {
		return r
	}
	if r := check("containers", s.Containers); r != "" {
		return r
	}
	ephemeral := make([]v1.Container, len(s.EphemeralContainers))
	for i := range s.EphemeralContainers {
		ephemeral[i] = v1.Container(s.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return check("ephemeralContainers", ephemeral)
}
