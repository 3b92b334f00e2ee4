// Package fieldpath resolves the downward API: the pod fields
// (metadata.name, metadata.labels, status.podIP, ...) and container
// resources (limits.cpu, requests.memory, ...) an environment variable or
// a downwardAPI volume file may name. It is the one implementation both
// use (pkg/pod/envvars, pkg/volume, the virtual engine and its providers),
// so the two can never disagree. Pure functions, no I/O.
package fieldpath

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// FormatMap renders labels or annotations as the downward API shows them:
// one key="value" per line, keys sorted, values quoted as Go quotes
// strings, no newline after the last line.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, m[k])
	}
	return string(b)
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(p string) (string, string, bool) {
	if !strings.HasSuffix(p, "']") {
		return p, "", false
	}
	head, key, ok := strings.Cut(strings.TrimSuffix(p, "']"), "['")
	if !ok || head == "" {
		return p, "", false
	}
	return head, key, true
}

// PodField returns the value of a pod metadata field, the set a
// downwardAPI volume may project: metadata.name, metadata.namespace,
// metadata.uid, metadata.labels, metadata.annotations (whole maps, see
// FormatMap) and one label or annotation by key (metadata.labels['k']; the
// key must be a valid label or annotation key).
func PodField(pod *v1.Pod, path string) (string, error) {
	if head, key, ok := splitSubscript(path); ok {
		switch head {
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// EnvField returns the value of a fieldRef of an environment variable:
// spec.nodeName (spec.host is its old name), spec.serviceAccountName,
// status.hostIP(s), status.podIP(s), and PodField's fields. podIPs and
// hostIPs are primary first; a pod without IPs yet gets "", a node whose
// IP is not known is an error. Other pod fields (spec.restartPolicy,
// status.phase, ...) are not part of the downward API for env, as
// upstream.
func EnvField(pod *v1.Pod, path string, podIPs, hostIPs []string) (string, error) {
	switch path {
	case "spec.nodeName", "spec.host":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("status.hostIP: the node's IP is not known")
		}
		return hostIPs[0], nil
	case "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("status.hostIPs: the node's IP is not known")
		}
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return PodField(pod, path)
}

// ContainerResource returns the value of a resourceFieldRef: a request or
// limit of cpu, memory, ephemeral-storage or hugepages-<size> of the
// container ref names (an app or init container), or of self when it
// names none (the container whose environment it is; nil for a volume,
// where the name is required).
//
// A limit the container does not set (or sets to zero) for cpu, memory or
// ephemeral-storage is the pod-level limit when the pod sets one (cpu and
// memory only: the resources pod-level limits support), else the node's
// allocatable amount. Hugepages are never defaulted. The value is divided
// by the divisor (1 when unset; cpu counts in cores) and rounded up.
func ContainerResource(pod *v1.Pod, self *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	c := self
	if ref.ContainerName != "" || c == nil {
		c = podspec.FindIn(pod.Spec.Containers, ref.ContainerName)
		if c == nil {
			c = podspec.FindIn(pod.Spec.InitContainers, ref.ContainerName)
		}
		if c == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	rn := v1.ResourceName(name)
	hugePages := strings.HasPrefix(name, v1.ResourceHugePagesPrefix)
	switch rn {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
	default:
		if !hugePages {
			return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
		}
	}
	var q resource.Quantity
	if kind == "requests" {
		q = c.Resources.Requests[rn]
	} else {
		q = c.Resources.Limits[rn]
		if q.IsZero() && !hugePages {
			q = defaultLimit(pod, rn, allocatable)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// defaultLimit is the limit a container without one shows: the pod-level
// limit when the pod sets one, else allocatable.
func defaultLimit(pod *v1.Pod, rn v1.ResourceName, allocatable v1.ResourceList) resource.Quantity {
	if pod.Spec.Resources != nil && rn != v1.ResourceEphemeralStorage {
		if q, ok := pod.Spec.Resources.Limits[rn]; ok && !q.IsZero() {
			return q
		}
	}
	return allocatable[rn]
}
