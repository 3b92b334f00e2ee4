package envvars

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

// FieldValue returns the value of a downward API field of pod, as an env
// var (fieldRef) or a downwardAPI volume file sees it. podIPs and hostIPs
// are primary first. The paths are the API's: metadata.name, .namespace,
// .uid, .labels['k'], .annotations['k'] (and the whole .labels and
// .annotations, one k="v" line each, sorted), spec.nodeName,
// spec.serviceAccountName, spec.restartPolicy, spec.schedulerName,
// status.phase, status.hostIP(s), status.podIP(s). spec.host is the old
// name of spec.nodeName.
func FieldValue(pod *v1.Pod, path string, podIPs, hostIPs []string) (string, error) {
	if base, key, ok := splitSubscript(path); ok {
		switch base {
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
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName", "spec.host":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "spec.restartPolicy":
		return string(podspec.RestartPolicy(pod)), nil
	case "spec.schedulerName":
		return pod.Spec.SchedulerName, nil
	case "status.phase":
		return string(pod.Status.Phase), nil
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
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(path string) (string, string, bool) {
	if !strings.HasSuffix(path, "']") {
		return path, "", false
	}
	base, key, ok := strings.Cut(strings.TrimSuffix(path, "']"), "['")
	if !ok || base == "" {
		return path, "", false
	}
	return base, key, true
}

// formatMap renders a map as the downward API does: sorted key="value"
// lines, values quoted as Go strings.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}

// ResourceValue returns the value of a resourceFieldRef for container c of
// pod (the container fs names, or c when it names none). A limit the
// container does not set (cpu, memory, ephemeral-storage) is the node's
// allocatable amount, or the pod-level limit when the pod sets one, as
// upstream defaults it. The value is divided by the divisor (1 when unset;
// cpu in cores by default) and rounded up.
func ResourceValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	target := c
	if fs.ContainerName != "" {
		target = podspec.FindIn(pod.Spec.Containers, fs.ContainerName)
		if target == nil {
			target = podspec.FindIn(pod.Spec.InitContainers, fs.ContainerName)
		}
		if target == nil {
			return "", fmt.Errorf("container %s not found", fs.ContainerName)
		}
	}
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
	}
	rn := v1.ResourceName(name)
	switch rn {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
	default:
		if !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
		}
	}
	var q resource.Quantity
	if kind == "requests" {
		q = target.Resources.Requests[rn]
	} else {
		q = target.Resources.Limits[rn]
		if q.IsZero() && rn != "" && !strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			q = defaultLimit(pod, rn, allocatable)
		}
	}
	if rn == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// defaultLimit is the limit a container without one gets for the downward
// API: the pod-level limit when the pod sets one, else allocatable.
func defaultLimit(pod *v1.Pod, rn v1.ResourceName, allocatable v1.ResourceList) resource.Quantity {
	if pod.Spec.Resources != nil && rn != v1.ResourceEphemeralStorage {
		if q, ok := pod.Spec.Resources.Limits[rn]; ok && !q.IsZero() {
			return q
		}
	}
	return allocatable[rn]
}
