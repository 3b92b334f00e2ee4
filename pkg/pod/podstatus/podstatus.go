package podstatus

import (
	"net"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// Options are the facts Compute needs that are not about the pod itself.
type Options struct {
	// Now stamps condition transitions and the start time.
	Now time.Time
	// RuntimeType prefixes container IDs ("containerd" when empty).
	RuntimeType string
	// HostIPs are the node's IPs, primary first. They become hostIP/hostIPs,
	// and the pod IPs of host-network pods.
	HostIPs []string
	// Terminal: the kubelet has decided the pod's containers will not run
	// again and they have stopped (see PhaseFacts.Terminal).
	Terminal bool
	// Probes gives startup and readiness results. When nil, probes in the
	// spec are ignored: a running container is started and ready.
	Probes ProbeResults
	// FailReason, when set, makes the pod Failed with this reason and
	// FailMessage (eviction, a rejected admission, a deadline exceeded).
	FailReason  string
	FailMessage string
	// Features are the feature gates the status follows
	// (PodReadyToStartContainersCondition); the zero value has them on.
	Features features.Gates
	// RecursiveReadOnlySupported: the pod's runtime handler supports
	// recursive read-only mounts (containers' volumeMounts[].
	// recursiveReadOnly in their status). Only asked for pods that use the
	// field (podspec.PodAsksRecursiveReadOnly).
	RecursiveReadOnlySupported bool
}

// Compute returns the API status of pod. observed is the runtime's view (nil
// when the runtime knows nothing of the pod); waiting holds, per container
// name, the reason the kubelet's last sync gave for not starting it; prev is
// the status the kubelet computed last (nil: the API's pod.Status is used).
// pod.Status is the API server's view: its non-kubelet conditions and a
// terminal phase are carried over.
func Compute(pod *v1.Pod, observed *container.PodStatus, waiting map[string]container.WaitingReason, prev *v1.PodStatus, opts Options) v1.PodStatus {
	old := &pod.Status
	if prev != nil {
		old = prev
	}
	s := v1.PodStatus{
		ObservedGeneration: pod.Generation,
		QOSClass:           podspec.QOSClass(pod),
		NominatedNodeName:  pod.Status.NominatedNodeName,
	}

	s.InitContainerStatuses = ContainerStatuses(pod, true, observed, waiting, old.InitContainerStatuses, opts.RuntimeType)
	s.ContainerStatuses = ContainerStatuses(pod, false, observed, waiting, old.ContainerStatuses, opts.RuntimeType)
	s.EphemeralContainerStatuses = EphemeralContainerStatuses(pod, observed, waiting, old.EphemeralContainerStatuses, opts.RuntimeType)
	setVolumeMounts(pod, &s, opts.RecursiveReadOnlySupported)
	for i := range s.EphemeralContainerStatuses {
		started := s.EphemeralContainerStatuses[i].State.Running != nil
		s.EphemeralContainerStatuses[i].Started = &started
	}
	if opts.Terminal {
		markContainersTerminated(pod, &s)
	}
	SetStartedAndReady(pod, s.InitContainerStatuses, s.ContainerStatuses, opts.Probes)

	// Phase, then the three-way rule: a terminal phase seen before (by us or
	// by the API) is never left.
	s.Phase = Phase(pod, s.InitContainerStatuses, s.ContainerStatuses, PhaseFacts{
		Terminal:    opts.Terminal,
		Initialized: HasInitialized(pod, observed),
	})
	if opts.Terminal && !IsTerminal(s.Phase) && !podspec.IsStatic(pod) {
		s.Phase = v1.PodFailed
	}
	if opts.FailReason != "" && !IsTerminal(old.Phase) && !IsTerminal(pod.Status.Phase) {
		s.Phase, s.Reason, s.Message = v1.PodFailed, opts.FailReason, opts.FailMessage
	}
	if !IsTerminal(s.Phase) {
		switch {
		case IsTerminal(old.Phase):
			s.Phase = old.Phase
		case IsTerminal(pod.Status.Phase):
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == old.Phase && s.Reason == "" {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}

	// Conditions: others' first (readiness gates read them), then ours.
	for _, c := range pod.Status.Conditions {
		if !IsOwnedCondition(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	var owned []v1.PodCondition
	if opts.Features.Enabled(features.PodReadyToStartContainersCondition) {
		owned = append(owned, ReadyToStartContainersCondition(observed))
	}
	owned = append(owned,
		InitializedCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		ReadyCondition(&pod.Spec, s.Conditions, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		ContainersReadyCondition(&pod.Spec, s.InitContainerStatuses, s.ContainerStatuses, s.Phase),
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	)
	for _, c := range owned {
		c.ObservedGeneration = pod.Generation
		s.Conditions = append(s.Conditions, c)
	}
	StampTransitions(s.Conditions, old.Conditions, opts.Now)

	// Addresses.
	if len(opts.HostIPs) > 0 {
		s.HostIP = opts.HostIPs[0]
		for _, ip := range opts.HostIPs {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: ip})
		}
	}
	s.PodIPs = PodIPs(pod, observed, old, opts.HostIPs)
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}

	CapTerminationMessages(pod, &s)

	// The start time is set once, when the kubelet first reports the pod.
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		s.StartTime = old.StartTime.DeepCopy()
	case pod.Status.StartTime != nil && !pod.Status.StartTime.IsZero():
		s.StartTime = pod.Status.StartTime.DeepCopy()
	default:
		t := metav1.NewTime(opts.Now)
		s.StartTime = &t
	}
	return s
}

// StampTransitions sets the lastTransitionTime of the kubelet's conditions:
// kept from the old condition of the same type when the status did not
// change, now otherwise. Other conditions keep their own times.
func StampTransitions(conds, old []v1.PodCondition, now time.Time) {
	for i := range conds {
		c := &conds[i]
		if !IsOwnedCondition(c.Type) {
			continue
		}
		if o := podspec.FindCondition(old, c.Type); o != nil && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
			c.LastTransitionTime = o.LastTransitionTime
			continue
		}
		c.LastTransitionTime = metav1.NewTime(now)
	}
}

// SetStartedAndReady fills Started and Ready in computed container statuses:
//   - app containers and sidecars: started when running and the startup
//     probe (if any) succeeded; ready when started and the readiness probe
//     (if any) succeeded — a probe without a result yet counts as failing;
//   - regular init containers: started when running; ready when they exited 0.
func SetStartedAndReady(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, probes ProbeResults) {
	probe := func(kind ProbeKind, spec *v1.Container, st *v1.ContainerStatus) bool {
		var p *v1.Probe
		if kind == StartupProbe {
			p = spec.StartupProbe
		} else {
			p = spec.ReadinessProbe
		}
		if p == nil || probes == nil {
			return true
		}
		ok, known := probes(kind, spec.Name, st.ContainerID)
		return known && ok
	}
	long := func(spec *v1.Container, st *v1.ContainerStatus) {
		started := st.State.Running != nil && probe(StartupProbe, spec, st)
		st.Started = &started
		st.Ready = started && probe(ReadinessProbe, spec, st)
	}
	for i := range statuses {
		if spec := podspec.FindIn(pod.Spec.Containers, statuses[i].Name); spec != nil {
			long(spec, &statuses[i])
		}
	}
	for i := range initStatuses {
		st := &initStatuses[i]
		spec := podspec.FindIn(pod.Spec.InitContainers, st.Name)
		if spec == nil {
			continue
		}
		if podspec.IsSidecar(spec) {
			long(spec, st)
			continue
		}
		started := st.State.Running != nil
		st.Started = &started
		st.Ready = st.State.Terminated != nil && st.State.Terminated.ExitCode == 0
	}
}

// HasInitialized reports whether the runtime shows that the pod completed
// initialization once: it has no init containers, an app container was
// created, or its last init container is a regular one that exited 0.
func HasInitialized(pod *v1.Pod, observed *container.PodStatus) bool {
	n := len(pod.Spec.InitContainers)
	if n == 0 {
		return true
	}
	for i := range pod.Spec.Containers {
		if observed.Latest(pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	last := &pod.Spec.InitContainers[n-1]
	return !podspec.IsSidecar(last) && exitedOK(observed.Latest(last.Name))
}

// PodIPs returns the pod's IPs: the node's for host-network pods; else the
// runtime's (newest ready sandbox); when there are none and no sandbox is
// ready (the pod stopped), the IPs reported before are kept, so a finished
// pod does not lose its address. IPs that do not parse are dropped.
func PodIPs(pod *v1.Pod, observed *container.PodStatus, old *v1.PodStatus, hostIPs []string) []v1.PodIP {
	var ips []string
	switch {
	case pod.Spec.HostNetwork:
		ips = hostIPs
	case observed != nil && len(observed.IPs) > 0:
		ips = observed.IPs
	case observed != nil && observed.ReadySandbox() != nil && len(observed.ReadySandbox().IPs) > 0:
		ips = observed.ReadySandbox().IPs
	}
	var out []v1.PodIP
	for _, ip := range ips {
		if net.ParseIP(ip) != nil {
			out = append(out, v1.PodIP{IP: ip})
		}
	}
	if len(out) == 0 && observed.ReadySandbox() == nil && old != nil {
		out = append(out, old.PodIPs...)
	}
	return out
}

// DropObservedGeneration clears the observedGeneration of the status and
// of its conditions, as upstream does with PodObservedGenerationTracking
// off.
func DropObservedGeneration(s *v1.PodStatus) {
	s.ObservedGeneration = 0
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = 0
	}
}

// setVolumeMounts reports each container's volumeMounts in its status, as
// upstream does (podspec.VolumeMountStatuses). The mounts of a container
// are fixed by its spec, so every instance reports the same.
func setVolumeMounts(pod *v1.Pod, s *v1.PodStatus, rroSupported bool) {
	set := func(specs []v1.Container, sts []v1.ContainerStatus) {
		for i := range sts {
			if c := podspec.FindIn(specs, sts[i].Name); c != nil {
				sts[i].VolumeMounts = podspec.VolumeMountStatuses(c, rroSupported)
			}
		}
	}
	set(pod.Spec.InitContainers, s.InitContainerStatuses)
	set(pod.Spec.Containers, s.ContainerStatuses)
	if len(pod.Spec.EphemeralContainers) > 0 {
		eph := make([]v1.Container, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			eph[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
		set(eph, s.EphemeralContainerStatuses)
	}
}
