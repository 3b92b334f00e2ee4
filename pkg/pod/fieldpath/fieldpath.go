// Package fieldpath resolves the downward API: the pod fields
// (metadata.name, metadata.labels, ...) and container resources
// (limits.cpu, requests.memory, ...) a downwardAPI volume file or an
// environment variable may name. Pure functions, no I/O.
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

// FormatMap renders labels or annotations as a downwardAPI file shows
// them: one key="value" per line, keys sorted, values quoted as Go quotes
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

// PodField returns the value of a pod field a downwardAPI volume may
// project: metadata.name, metadata.namespace, metadata.uid,
// metadata.labels, metadata.annotations (whole maps, see FormatMap) and
// one label or annotation by key (metadata.labels['k']).
func PodField(pod *v1.Pod, path string) (string, error) {
	if head, key, ok := splitSubscript(path); ok {
		switch head {
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, "; "))
			}
			return pod.Labels[key], nil
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", path, strings.Join(errs, "; "))
			}
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support a subscript", path)
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
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// ContainerResource returns the value of a resourceFieldRef for the named
// container of the pod (an app or init container). A limit the container
// does not set (cpu, memory, ephemeral-storage) is the node's allocatable
// amount, as upstream reports it. The value is divided by the divisor
// (default 1) and rounded up.
func ContainerResource(pod *v1.Pod, containerName string, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	c, kind, ok := podspec.FindContainer(pod, containerName)
	if !ok || kind == podspec.Ephemeral {
		return "", fmt.Errorf("container %q not found", containerName)
	}
	limits := v1.ResourceList{}
	for k, v := range c.Resources.Limits {
		limits[k] = v
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[r]; ok && !q.IsZero() {
			continue
		}
		if a, ok := allocatable[r]; ok {
			limits[r] = a
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	which, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (which != "limits" && which != "requests") {
		return "", fmt.Errorf("unsupported container resource %q", ref.Resource)
	}
	list := c.Resources.Requests
	if which == "limits" {
		list = limits
	}
	rn := v1.ResourceName(name)
	q := list[rn]
	switch {
	case rn == v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == v1.ResourceMemory, rn == v1.ResourceEphemeralStorage, strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource %q", ref.Resource)
}
