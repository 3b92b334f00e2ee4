package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Input checks what a pod carries into host paths and cgroup files before
// anything else looks at it: a UID that is not one clean path element
// (ReasonInvalidUID), and resource quantities beyond what a cgroup can hold
// (ReasonQuantityTooLarge), which would otherwise wrap around to 0 or a
// negative number in the node's arithmetic and cgroup limits. The API
// server never sends such pods; a static manifest or a provider can.
func Input(pod *v1.Pod) Result {
	if err := podspec.UIDPathElement(string(pod.UID)); err != nil {
		return Result{Reason: ReasonInvalidUID, Message: fmt.Sprintf("pod UID %q cannot be used: %v", pod.UID, err)}
	}
	if msg := quantitiesBeyondCgroups(pod); msg != "" {
		return Result{Reason: ReasonQuantityTooLarge, Message: msg}
	}
	return Result{Admit: true}
}

const (
	ReasonInvalidUID       = "InvalidPodUID"
	ReasonQuantityTooLarge = "ResourceQuantityTooLarge"
)

// The largest quantities a cgroup can hold, with the margin the node's
// arithmetic needs: CPU in millicores is multiplied by the CFS period in
// microseconds (100000) and by 1024 for shares, so one million CPUs stays
// far inside int64; byte counts stay inside the kernel's page counter
// (LONG_MAX rounded down to pages) at 2^62 bytes.
var (
	MaxCPU   = resource.MustParse("1M")
	MaxBytes = *resource.NewQuantity(1<<62, resource.BinarySI)
)

// quantitiesBeyondCgroups names the first request, limit or overhead of pod
// that is negative or beyond MaxCPU (cpu) or MaxBytes (every other
// resource: memory, ephemeral-storage, hugepages-*, extended resources
// are counts at most as large), or "".
func quantitiesBeyondCgroups(pod *v1.Pod) string {
	check := func(where string, list v1.ResourceList) string {
		for name, q := range list {
			max := MaxBytes
			if name == v1.ResourceCPU {
				max = MaxCPU
			}
			if q.Sign() < 0 {
				return fmt.Sprintf("%s %s is %s: a quantity cannot be negative", where, name, q.String())
			}
			if q.Cmp(max) > 0 {
				return fmt.Sprintf("%s %s is %s, more than a cgroup can hold (at most %s)", where, name, q.String(), max.String())
			}
		}
		return ""
	}
	containers := func(kind string, cs []v1.Container) string {
		for _, c := range cs {
			if m := check(fmt.Sprintf("%s %q: requests", kind, c.Name), c.Resources.Requests); m != "" {
				return m
			}
			if m := check(fmt.Sprintf("%s %q: limits", kind, c.Name), c.Resources.Limits); m != "" {
				return m
			}
		}
		return ""
	}
	if m := containers("container", pod.Spec.Containers); m != "" {
		return m
	}
	if m := containers("init container", pod.Spec.InitContainers); m != "" {
		return m
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		c := v1.Container{Name: ec.Name, Resources: ec.Resources}
		if m := containers("ephemeral container", []v1.Container{c}); m != "" {
			return m
		}
	}
	if r := pod.Spec.Resources; r != nil {
		if m := check("pod: requests", r.Requests); m != "" {
			return m
		}
		if m := check("pod: limits", r.Limits); m != "" {
			return m
		}
	}
	return check("pod: overhead", pod.Spec.Overhead)
}
