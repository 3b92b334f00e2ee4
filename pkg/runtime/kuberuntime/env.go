package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Expand replaces $(VAR) references in s with values from env. "$$" is an
// escaped "$"; a reference to an unknown variable is left as written, as
// Kubernetes documents for command, args and env values.
func Expand(s string, env func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// fieldEnv resolves the downward-API fields the runtime manager knows
// itself.
func fieldEnv(pod *v1.Pod, podIPs []string, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP":
		if len(podIPs) > 0 {
			return podIPs[0], true
		}
		return "", true
	case "status.podIPs":
		return strings.Join(podIPs, ","), true
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, true
	}
	if strings.HasPrefix(path, "metadata.labels['") && strings.HasSuffix(path, "']") {
		return pod.Labels[path[len("metadata.labels['"):len(path)-2]], true
	}
	if strings.HasPrefix(path, "metadata.annotations['") && strings.HasSuffix(path, "']") {
		return pod.Annotations[path[len("metadata.annotations['"):len(path)-2]], true
	}
	return "", false
}

// resolveEnv returns the container's environment in order, with $(VAR)
// expanded against the variables defined before each one. Values that need
// the API server (ConfigMap, Secret refs) must come resolved from the
// ContainerOptions hook; without it they are an error unless optional.
func resolveEnv(pod *v1.Pod, c *v1.Container, podIPs []string, resolved []v1.EnvVar) ([][2]string, error) {
	src := c.Env
	if resolved != nil {
		src = resolved
	} else if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom in container %q needs ConfigMap/Secret access, which is not configured", c.Name)
	}
	vals := map[string]string{}
	var out [][2]string
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	for _, e := range src {
		v := e.Value
		switch {
		case e.ValueFrom == nil:
			v = Expand(v, lookup)
		case e.ValueFrom.FieldRef != nil:
			fv, ok := fieldEnv(pod, podIPs, e.ValueFrom.FieldRef.FieldPath)
			if !ok {
				return nil, fmt.Errorf("env %q: unsupported fieldRef %q", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			v = fv
		case e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Optional != nil && *e.ValueFrom.ConfigMapKeyRef.Optional,
			e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional:
			continue
		default:
			return nil, fmt.Errorf("env %q of container %q needs a value source that is not configured", e.Name, c.Name)
		}
		if _, seen := vals[e.Name]; !seen {
			out = append(out, [2]string{e.Name, v})
		} else {
			for i := range out {
				if out[i][0] == e.Name {
					out[i][1] = v
				}
			}
		}
		vals[e.Name] = v
	}
	return out, nil
}
