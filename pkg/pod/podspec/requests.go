package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// WithDefaultedRequests returns the pod with API defaulting's rule for
// requests applied: a container (init or app) that limits a resource but
// does not request it requests its limit. Pods from the API server are
// defaulted already; static pods are not. It returns pod itself when
// nothing changes, a copy otherwise.
func WithDefaultedRequests(pod *v1.Pod) *v1.Pod {
	needs := func(cs []v1.Container) bool {
		for _, c := range cs {
			for name := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[name]; !ok {
					return true
				}
			}
		}
		return false
	}
	if !needs(pod.Spec.Containers) && !needs(pod.Spec.InitContainers) {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = v1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// IsExtendedResourceName tells an extended resource (a device plugin's, or
// one an administrator advertises): a domain-prefixed name outside
// kubernetes.io/ that would also be valid as a quota name
// (requests.<name>).
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}
