package kubernetes

// Stats of a virtual node (provider.StatsProvider), so its kubelet API
// serves /stats/summary and /metrics/resource and metrics-server (and
// `kubectl top`) sees the pods it runs in the target.
//
// Source: the target cluster's metrics API, metrics.k8s.io/v1beta1
// PodMetrics, one LIST per target namespace this provider has pods in per
// call, with the provider's own target identity (no nodes/proxy: that
// right is as strong as exec). Only pods this provider created count (its
// records, owned.go: the target pod's namespace, name and UID), reported
// under the origin pod's namespace, name and UID; every other PodMetrics
// of a namespace is ignored.
//
// PodMetrics give a CPU rate (the usage over [timestamp-window,
// timestamp]) and the memory working set. A kubelet's summary has
// cumulative CPU, from which metrics-server computes the rate of two
// scrapes; so each container instance (its target container ID) keeps a
// counter that integrates rate × elapsed between distinct samples: a
// sample with a timestamp not after the last one counted adds nothing,
// so the rate metrics-server computes between two of our samples is the
// target's rate. A container instance first seen (a new pod, a restart:
// a new container ID) starts at 0, unless the sample's window reaches back
// to the container's start (then rate × window is all the CPU it used).

import (
	"math"
	"math/bits"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// startSkew is how much earlier than its true start a container's
// status may say it started (metav1.Time is kept to the second).
const startSkew = time.Second

// statsTarget is one pod of this provider: its record (the origin's
// identity) and its target pod.
type statsTarget struct {
	rec ownedPod
	pod *v1.Pod
}

// ownedTargets pairs the records with their target pods (get: the
// informer's pod, nil when there is none). A record counts only when its
// target pod exists with the UID the provider created: any other pod of
// that name, or any pod without a record, is not this node's.
func ownedTargets(recs []ownedPod, get func(namespace, name string) *v1.Pod) []statsTarget {
	var out []statsTarget
	for _, rec := range recs {
		if rec.TargetUID == "" {
			continue
		}
		tp := get(rec.TargetNamespace, rec.OriginName)
		if tp == nil || tp.UID != rec.TargetUID || tp.Namespace != rec.TargetNamespace || tp.Name != rec.OriginName {
			continue
		}
		rec.Tokens = nil
		out = append(out, statsTarget{rec: rec, pod: tp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.key() < out[j].rec.key() })
	return out
}

// targetNamespaces are the namespaces the targets live in, each once.
func targetNamespaces(ts []statsTarget) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t.rec.TargetNamespace] {
			seen[t.rec.TargetNamespace] = true
			out = append(out, t.rec.TargetNamespace)
		}
	}
	sort.Strings(out)
	return out
}

// containerSample is one container's figures in a PodMetrics item, tied
// to the container instance the target pod's status shows running.
type containerSample struct {
	name    string
	id      string    // the target's container ID: a new one is a restart
	started time.Time // from the target pod's status
	at      time.Time // the PodMetrics timestamp
	window  time.Duration
	// nanoCores is the CPU rate over the window; workingSet the memory.
	nanoCores, workingSet uint64
}

// samplesOf matches a PodMetrics item to its target pod's running
// containers (init and sidecar containers too). A container has a sample
// when the status shows it running with a container ID, the item names it
// with cpu and memory, and the item was taken after the container
// started (older figures are an earlier instance's). complete: every
// running container has one.
func samplesOf(pm *metricsv1beta1.PodMetrics, tp *v1.Pod) (out []containerSample, complete bool) {
	if pm == nil {
		return nil, false
	}
	byName := map[string]*metricsv1beta1.ContainerMetrics{}
	for i := range pm.Containers {
		byName[pm.Containers[i].Name] = &pm.Containers[i]
	}
	complete = true
	for _, list := range [][]v1.ContainerStatus{tp.Status.InitContainerStatuses, tp.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Running == nil {
				continue
			}
			s, ok := sampleOf(pm, byName[cs.Name], cs)
			if !ok {
				complete = false
				continue
			}
			out = append(out, s)
		}
	}
	return out, complete && len(out) > 0
}

func sampleOf(pm *metricsv1beta1.PodMetrics, cm *metricsv1beta1.ContainerMetrics, cs v1.ContainerStatus) (containerSample, bool) {
	if cm == nil || cs.ContainerID == "" {
		return containerSample{}, false
	}
	started := cs.State.Running.StartedAt.Time
	at := pm.Timestamp.Time
	if at.IsZero() || !at.After(started) {
		return containerSample{}, false
	}
	cpu, okc := cm.Usage[v1.ResourceCPU]
	mem, okm := cm.Usage[v1.ResourceMemory]
	if !okc || !okm || cpu.Sign() < 0 || mem.Sign() < 0 {
		return containerSample{}, false
	}
	return containerSample{
		name: cs.Name, id: cs.ContainerID, started: started, at: at, window: pm.Window.Duration,
		nanoCores: uint64(cpu.ScaledValue(resource.Nano)), workingSet: uint64(mem.Value()),
	}, true
}

// containerUsage is the figures of one container instance.
type containerUsage struct {
	id      string
	started time.Time
	// at is the timestamp of the last sample counted; total the CPU it
	// used since first seen (core-nanoseconds), up to at.
	at    time.Time
	total uint64
	// The last sample's rate and memory.
	nanoCores, workingSet uint64
}

// integrate counts sample s into u (nil: not seen before) and returns the
// new figures and the CPU (core-nanoseconds) the sample added:
//   - a new instance (none yet, or another container ID) starts at 0 with
//     this sample; but when the sample's window reaches back to its start
//     (metrics-server's first figures of a fresh container), rate × window
//     is all it used, and it starts there;
//   - a sample not after the last one counted (the same scrape, or an
//     older one) adds nothing and changes nothing;
//   - otherwise it adds rate × the time since the last one counted.
func integrate(u *containerUsage, s containerSample) (containerUsage, uint64) {
	if u == nil || u.id != s.id {
		n := containerUsage{id: s.id, started: s.started, at: s.at, nanoCores: s.nanoCores, workingSet: s.workingSet}
		if s.window > 0 && !s.started.Before(s.at.Add(-s.window-startSkew)) {
			n.total = cpuTime(s.nanoCores, s.window)
		}
		return n, n.total
	}
	if !s.at.After(u.at) {
		return *u, 0
	}
	inc := cpuTime(s.nanoCores, s.at.Sub(u.at))
	n := *u
	n.total, n.at, n.nanoCores, n.workingSet = addSat(u.total, inc), s.at, s.nanoCores, s.workingSet
	return n, inc
}

// cpuTime is the CPU (core-nanoseconds) a rate uses over d.
func cpuTime(nanoCores uint64, d time.Duration) uint64 {
	if d <= 0 || nanoCores == 0 {
		return 0
	}
	hi, lo := bits.Mul64(nanoCores, uint64(d))
	if hi >= 1e9 {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, 1e9)
	return q
}

func addSat(a, b uint64) uint64 {
	if s, c := bits.Add64(a, b, 0); c == 0 {
		return s
	}
	return math.MaxUint64
}

// podUsage is one target pod's figures.
type podUsage struct {
	// total is the CPU of every sample its containers added (so it never
	// goes back when one restarts); at the latest sample counted.
	total      uint64
	at         time.Time
	containers map[string]*containerUsage
}

// statsState is what the counters remember between calls: by target pod
// UID, only for the pods that still exist (pruned at every call).
type statsState struct {
	mu   sync.Mutex
	pods map[types.UID]*podUsage
	// The node's total: every sample its pods added; at the latest.
	nodeTotal uint64
	nodeAt    time.Time
}

// update counts the samples of items (the PodMetrics of the targets'
// namespaces) into the counters, forgets pods that are no longer
// targets, and returns the summary: the targets with samples, under the
// origin's identity. Safe for concurrent calls: figures always come from
// the counters (the latest sample counted), so a call whose LIST was
// older than another's reports the newer figures.
func (st *statsState) update(targets []statsTarget, items []metricsv1beta1.PodMetrics, node string, started time.Time) *statsv1alpha1.Summary {
	byName := make(map[string]*metricsv1beta1.PodMetrics, len(items))
	for i := range items {
		byName[items[i].Namespace+"/"+items[i].Name] = &items[i]
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.pods == nil {
		st.pods = map[types.UID]*podUsage{}
	}
	live := make(map[types.UID]bool, len(targets))
	for _, t := range targets {
		live[t.pod.UID] = true
	}
	for uid := range st.pods {
		if !live[uid] {
			delete(st.pods, uid)
		}
	}

	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: node, StartTime: metav1.NewTime(started)}}
	var nodeRate, nodeMem uint64
	counted := false
	for _, t := range targets {
		samples, complete := samplesOf(byName[t.pod.Namespace+"/"+t.pod.Name], t.pod)
		if len(samples) == 0 {
			continue
		}
		pu := st.pods[t.pod.UID]
		if pu == nil {
			pu = &podUsage{containers: map[string]*containerUsage{}}
			st.pods[t.pod.UID] = pu
		}
		ps := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: t.rec.OriginName, Namespace: t.rec.OriginNamespace, UID: string(t.rec.OriginUID)}}
		if t.pod.Status.StartTime != nil {
			ps.StartTime = *t.pod.Status.StartTime
		}
		var podRate, podMem uint64
		for _, sm := range samples {
			n, inc := integrate(pu.containers[sm.name], sm)
			pu.containers[sm.name] = &n
			pu.total, st.nodeTotal = addSat(pu.total, inc), addSat(st.nodeTotal, inc)
			if n.at.After(pu.at) {
				pu.at = n.at
			}
			if n.at.After(st.nodeAt) {
				st.nodeAt = n.at
			}
			at := metav1.NewTime(n.at)
			ps.Containers = append(ps.Containers, statsv1alpha1.ContainerStats{
				Name: sm.name, StartTime: metav1.NewTime(n.started),
				CPU:    &statsv1alpha1.CPUStats{Time: at, UsageNanoCores: ptrTo(n.nanoCores), UsageCoreNanoSeconds: ptrTo(n.total)},
				Memory: &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: ptrTo(n.workingSet)},
			})
			podRate, podMem = addSat(podRate, n.nanoCores), addSat(podMem, n.workingSet)
		}
		if complete {
			at := metav1.NewTime(pu.at)
			ps.CPU = &statsv1alpha1.CPUStats{Time: at, UsageNanoCores: ptrTo(podRate), UsageCoreNanoSeconds: ptrTo(pu.total)}
			ps.Memory = &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: ptrTo(podMem)}
		}
		nodeRate, nodeMem = addSat(nodeRate, podRate), addSat(nodeMem, podMem)
		counted = true
		s.Pods = append(s.Pods, ps)
	}
	if counted {
		at := metav1.NewTime(st.nodeAt)
		s.Node.CPU = &statsv1alpha1.CPUStats{Time: at, UsageNanoCores: ptrTo(nodeRate), UsageCoreNanoSeconds: ptrTo(st.nodeTotal)}
		s.Node.Memory = &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: ptrTo(nodeMem)}
	}
	return s
}
