package kuberuntime

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
)

// Numbers of the upstream resource mapping (users see them in cgroups).
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	quotaPeriod   = 100000 // 100ms in µs
	minQuotaPerio = 1000

	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// CgroupParent returns the pod's cgroup parent for the CRI with the QoS
// hierarchy of cgroupsPerQOS: <root>/kubepods[/burstable|/besteffort]/pod<uid>
// with the cgroupfs driver, the expanded systemd slice path with the
// systemd driver. The kubelet passes its cgroup manager's PodParent as
// Options.CgroupParent instead, which also knows cgroupsPerQOS.
func CgroupParent(pod *v1.Pod, driver, root string) string {
	n, _ := cgroups.Hierarchy{Root: cgroups.ParseRoot(root, driver), PerQOS: true}.Pod(pod)
	return n.Path(driver)
}

// cgroupParent is the sandbox's cgroup parent: Options.CgroupParent when
// set, else CgroupParent.
func (m *Manager) cgroupParent(pod *v1.Pod) string {
	if m.opts.CgroupParent != nil {
		return m.opts.CgroupParent(pod)
	}
	return CgroupParent(pod, m.opts.CgroupDriver, m.opts.CgroupRoot)
}

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	s := milli * sharesPerCPU / 1000
	if s < minShares {
		return minShares
	}
	if s > maxShares {
		return maxShares
	}
	return s
}

func milliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	q := milli * period / 1000
	if q < minQuotaPerio {
		q = minQuotaPerio
	}
	return q
}

// OOMScoreAdj returns the oom_score_adj the upstream kubelet gives a
// container by QoS: -997 guaranteed, 1000 best-effort, and for burstable
// 1000 - 1000*memoryRequest/machineMemory, kept within [3, 999]. The
// runtime may clamp it (containerd's restrict_oom_score_adj).
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memCapacity int64) int64 {
	switch podspec.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if pod.Spec.PriorityClassName == "system-node-critical" || pod.Spec.PriorityClassName == "system-cluster-critical" {
		return guaranteedOOMScoreAdj
	}
	req := c.Resources.Requests.Memory().Value()
	if memCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	adj := 1000 - (1000*req)/memCapacity
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj >= besteffortOOMScoreAdj {
		return besteffortOOMScoreAdj - 1
	}
	return adj
}

// linuxResources maps a container's requests and limits to CRI resources.
func linuxResources(pod *v1.Pod, c *v1.Container, memCapacity int64) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq := c.Resources.Requests.Cpu().MilliValue()
	if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
		// The API server defaults requests to limits; do it for static pods.
		cpuReq = c.Resources.Limits.Cpu().MilliValue()
	}
	r.CpuShares = milliCPUToShares(cpuReq)
	if lim := c.Resources.Limits.Cpu().MilliValue(); lim > 0 {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(lim, quotaPeriod)
	}
	r.MemoryLimitInBytes = c.Resources.Limits.Memory().Value()
	r.OomScoreAdj = OOMScoreAdj(pod, c, memCapacity)
	r.HugepageLimits = hugepageLimits(c.Resources.Limits, hugePageSizes())
	return r
}

func readMemTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
