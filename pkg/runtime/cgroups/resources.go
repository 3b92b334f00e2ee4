package cgroups

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// The upstream resource mapping (users see these numbers in cgroups).
const (
	MinShares    = 2
	MaxShares    = 262144
	SharesPerCPU = 1024
	// DefaultQuotaPeriod is the CFS period in microseconds (100ms).
	DefaultQuotaPeriod = 100000
	minQuota           = 1000
)

// Resources are the limits a cgroup carries; nil fields are left as they
// are. CPU shares are the v1 unit; v2 writes the matching cpu.weight.
type Resources struct {
	CPUShares *uint64
	// CPUQuota is in microseconds per CPUPeriod; -1 means no quota.
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the limit in bytes; -1 means none.
	Memory *int64
	// Pids is the maximum number of tasks; -1 means none.
	Pids *int64
}

// PodOptions are the node's settings that shape a pod's cgroup.
type PodOptions struct {
	// CFSQuota is cpuCFSQuota: enforce CPU limits with a CFS quota.
	CFSQuota bool
	// QuotaPeriod is cpuCFSQuotaPeriod in microseconds (0: 100000).
	QuotaPeriod uint64
	// PidsLimit is podPidsLimit; <= 0 sets none.
	PidsLimit int64
}

// MilliCPUToShares maps a CPU request to cpu.shares: 1024 per CPU, at
// least 2, at most 262144.
func MilliCPUToShares(milli int64) uint64 {
	if milli == 0 {
		return MinShares
	}
	s := milli * SharesPerCPU / 1000
	if s < MinShares {
		return MinShares
	}
	if s > MaxShares {
		return MaxShares
	}
	return uint64(s)
}

// MilliCPUToQuota maps a CPU limit to a CFS quota for period (µs); at least
// 1000µs, 0 for no limit.
func MilliCPUToQuota(milli int64, period uint64) int64 {
	if milli == 0 {
		return 0
	}
	q := milli * int64(period) / 1000
	if q < minQuota {
		q = minQuota
	}
	return q
}

// SharesToWeight converts cpu.shares [2, 262144] to the v2 cpu.weight
// [1, 10000], as upstream does.
func SharesToWeight(shares uint64) uint64 {
	if shares < MinShares {
		shares = MinShares
	}
	if shares >= MaxShares {
		return 10000
	}
	return 1 + ((shares-MinShares)*9999)/(MaxShares-MinShares)
}

// ForPod maps a pod to its cgroup's limits, as upstream's
// ResourceConfigForPod: shares from the pod's CPU requests (overhead
// included); a CFS quota when every container limits CPU (or the pod-level
// resources do) and a memory limit when every container limits memory
// (or the pod does), both summed with the overhead; a guaranteed pod always
// gets both; a best-effort pod gets the minimum shares and nothing else.
// The pids limit is the node's podPidsLimit. A container that limits a
// resource without requesting it requests its limit (API defaulting, which
// static pods did not go through).
func ForPod(pod *v1.Pod, o PodOptions) *Resources {
	period := o.QuotaPeriod
	if period == 0 {
		period = DefaultQuotaPeriod
	}
	pod = podspec.WithDefaultedRequests(pod)
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memDeclared := true, true
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	// A limit counts as declared only when every container, init
	// containers included, sets its own (upstream 1.37's rule).
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Cpu().IsZero() {
				cpuDeclared = false
			}
			if cs[i].Resources.Limits.Memory().IsZero() {
				memDeclared = false
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memDeclared = true
		}
	}
	var cpuReq, cpuLim, memLim int64
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuReq = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceCPU]; ok {
		cpuLim = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceMemory]; ok {
		memLim = q.Value()
	}
	shares := MilliCPUToShares(cpuReq)
	quota := MilliCPUToQuota(cpuLim, period)
	if !o.CFSQuota {
		quota = -1
	}

	r := &Resources{}
	switch podspec.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		r.CPUShares, r.CPUQuota, r.CPUPeriod, r.Memory = &shares, &quota, &period, &memLim
	case v1.PodQOSBurstable:
		r.CPUShares = &shares
		if cpuDeclared {
			r.CPUQuota, r.CPUPeriod = &quota, &period
		}
		if memDeclared {
			r.Memory = &memLim
		}
	default:
		min := uint64(MinShares)
		r.CPUShares = &min
	}
	if o.PidsLimit > 0 {
		p := o.PidsLimit
		r.Pids = &p
	}
	return r
}

// ForNode is the kubepods cgroup's limits for node allocatable: memory,
// shares from the CPUs, and pids when pids > 0.
func ForNode(allocatable v1.ResourceList, pids int64) *Resources {
	r := &Resources{}
	if q, ok := allocatable[v1.ResourceMemory]; ok {
		m := q.Value()
		r.Memory = &m
	}
	if q, ok := allocatable[v1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		r.CPUShares = &s
	}
	if pids > 0 {
		r.Pids = &pids
	}
	return r
}

// ForReserved is what enforcing a reservation on an existing cgroup
// writes: its memory, CPU shares and pids, or only the shares when
// compressibleOnly.
func ForReserved(reserved v1.ResourceList, compressibleOnly bool) *Resources {
	r := &Resources{}
	if q, ok := reserved[v1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		r.CPUShares = &s
	}
	if compressibleOnly {
		return r
	}
	if q, ok := reserved[v1.ResourceMemory]; ok {
		m := q.Value()
		r.Memory = &m
	}
	if q, ok := reserved["pid"]; ok {
		p := q.Value()
		r.Pids = &p
	}
	return r
}

// BurstableShares is the burstable level's cpu.shares: the sum of the CPU
// requests of the burstable pods among pods.
func BurstableShares(pods []*v1.Pod) uint64 {
	var milli int64
	for _, p := range pods {
		if podspec.QOSClass(p) != v1.PodQOSBurstable {
			continue
		}
		req := resourcehelper.PodRequests(podspec.WithDefaultedRequests(p), resourcehelper.PodResourcesOptions{})
		milli += req.Cpu().MilliValue()
	}
	return MilliCPUToShares(milli)
}
