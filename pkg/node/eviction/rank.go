package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// ContainerUsage is what one container uses.
type ContainerUsage struct {
	Memory int64
	// Rootfs is its writable layer, Logs its log files, in bytes.
	Rootfs int64
	Logs   int64
}

// PodUsage is what a pod uses, as the ranking needs it.
type PodUsage struct {
	// Memory is the pod cgroup's working set.
	Memory int64
	// Disk usage in bytes and inodes: the containers' writable layers,
	// their logs, and the pod's local volumes (disk-backed emptyDir).
	Rootfs, Logs, Volumes                   int64
	RootfsInodes, LogsInodes, VolumesInodes int64
	// Processes is the pod's task count.
	Processes int64
	// Containers by name, for the eviction message.
	Containers map[string]ContainerUsage
}

// UsageFunc gives a pod's usage; false when it could not be measured.
type UsageFunc func(*v1.Pod) (PodUsage, bool)

// Disk is the pod's usage of the resource starved under signal's pressure:
// everything when images and pods share one filesystem; with a dedicated
// image filesystem, nodefs counts logs and volumes and imagefs the
// writable layers.
func (u PodUsage) Disk(signal Signal, dedicatedImageFs bool) (bytes, inodes int64) {
	rootfs := !dedicatedImageFs || signal == ImageFsAvailable || signal == ImageFsInodesFree ||
		signal == ContainerFsAvailable || signal == ContainerFsInodesFree
	node := !dedicatedImageFs || signal == NodeFsAvailable || signal == NodeFsInodesFree
	if rootfs {
		bytes += u.Rootfs
		inodes += u.RootfsInodes
	}
	if node {
		bytes += u.Logs + u.Volumes
		inodes += u.LogsInodes + u.VolumesInodes
	}
	return bytes, inodes
}

// request is the pod's effective request of a resource (overhead
// included), as the scheduler and upstream's ranking count it.
func request(pod *v1.Pod, name v1.ResourceName) int64 {
	reqs := resourcehelper.PodRequests(podspec.WithDefaultedRequests(pod), resourcehelper.PodResourcesOptions{})
	q := reqs[name]
	return q.Value()
}

type cmpFunc func(a, b *v1.Pod) int

// Rank orders pods for eviction under signal's pressure, first to go
// first, as upstream ranks them:
//   - memory: pods using more than they request, then lower priority,
//     then usage above request;
//   - disk (bytes or inodes): the same with the disk usage that signal
//     counts;
//   - pids: lower priority, then more processes.
//
// A pod without usage figures goes first.
func Rank(pods []*v1.Pod, signal Signal, dedicatedImageFs bool, usage UsageFunc) {
	cache := map[*v1.Pod]struct {
		u  PodUsage
		ok bool
	}{}
	get := func(p *v1.Pod) (PodUsage, bool) {
		c, seen := cache[p]
		if !seen {
			c.u, c.ok = usage(p)
			cache[p] = c
		}
		return c.u, c.ok
	}
	var cmps []cmpFunc
	switch signal.Resource() {
	case v1.ResourceMemory:
		used := func(p *v1.Pod, u PodUsage) int64 { return u.Memory }
		cmps = []cmpFunc{exceeds(get, used, v1.ResourceMemory), byPriority, aboveRequest(get, used, v1.ResourceMemory)}
	case ResourcePIDs:
		cmps = []cmpFunc{byPriority, func(a, b *v1.Pod) int {
			ua, oka := get(a)
			ub, okb := get(b)
			if !oka || !okb {
				return cmpBool(!oka, !okb)
			}
			return cmpInt(ub.Processes, ua.Processes)
		}}
	case ResourceInodes:
		used := func(p *v1.Pod, u PodUsage) int64 { _, i := u.Disk(signal, dedicatedImageFs); return i }
		// Pods request no inodes: everyone exceeds, usage decides.
		cmps = []cmpFunc{exceeds(get, used, ResourceInodes), byPriority, aboveRequest(get, used, ResourceInodes)}
	default:
		used := func(p *v1.Pod, u PodUsage) int64 { b, _ := u.Disk(signal, dedicatedImageFs); return b }
		cmps = []cmpFunc{exceeds(get, used, v1.ResourceEphemeralStorage), byPriority, aboveRequest(get, used, v1.ResourceEphemeralStorage)}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		for _, c := range cmps {
			if r := c(pods[i], pods[j]); r != 0 {
				return r < 0
			}
		}
		return false
	})
}

// exceeds puts pods using more than they request first.
func exceeds(get UsageFunc, used func(*v1.Pod, PodUsage) int64, name v1.ResourceName) cmpFunc {
	return func(a, b *v1.Pod) int {
		ua, oka := get(a)
		ub, okb := get(b)
		if !oka || !okb {
			return cmpBool(!oka, !okb)
		}
		return cmpBool(used(a, ua) > request(a, name), used(b, ub) > request(b, name))
	}
}

// aboveRequest puts the pod using the most above its request first.
func aboveRequest(get UsageFunc, used func(*v1.Pod, PodUsage) int64, name v1.ResourceName) cmpFunc {
	return func(a, b *v1.Pod) int {
		ua, oka := get(a)
		ub, okb := get(b)
		if !oka || !okb {
			return cmpBool(!oka, !okb)
		}
		return cmpInt(used(b, ub)-request(b, name), used(a, ua)-request(a, name))
	}
}

// byPriority puts lower priority first.
func byPriority(a, b *v1.Pod) int {
	return cmpInt(int64(corev1helpers.PodPriority(a)), int64(corev1helpers.PodPriority(b)))
}

// cmpBool puts true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
