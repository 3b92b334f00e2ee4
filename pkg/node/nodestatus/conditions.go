package nodestatus

import (
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions, as the upstream kubelet writes
// them (tools and dashboards match on them).
const (
	ReasonReady    = "KubeletReady"
	MessageReady   = "kubelet is posting ready status"
	ReasonNotReady = "KubeletNotReady"

	ReasonSufficientMemory   = "KubeletHasSufficientMemory"
	MessageSufficientMemory  = "kubelet has sufficient memory available"
	ReasonInsufficientMemory = "KubeletHasInsufficientMemory"
	MessageInsufficientMem   = "kubelet has insufficient memory available"

	ReasonNoDiskPressure  = "KubeletHasNoDiskPressure"
	MessageNoDiskPressure = "kubelet has no disk pressure"
	ReasonDiskPressure    = "KubeletHasDiskPressure"
	MessageDiskPressure   = "kubelet has disk pressure"

	ReasonSufficientPID    = "KubeletHasSufficientPID"
	MessageSufficientPID   = "kubelet has sufficient PID available"
	ReasonInsufficientPID  = "KubeletHasInsufficientPID"
	MessageInsufficientPID = "kubelet has insufficient PID available"
)

// requiredCapacity are the resources without which the node reports
// NotReady.
var requiredCapacity = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods}

// desiredConditions are the conditions' type/status/reason/message, without
// times, in the order upstream lists them.
func desiredConditions(capacity v1.ResourceList, r Readiness, p Pressure) []v1.NodeCondition {
	pressure := func(t v1.NodeConditionType, on bool, yesReason, yesMsg, noReason, noMsg string) v1.NodeCondition {
		if on {
			return v1.NodeCondition{Type: t, Status: v1.ConditionTrue, Reason: yesReason, Message: yesMsg}
		}
		return v1.NodeCondition{Type: t, Status: v1.ConditionFalse, Reason: noReason, Message: noMsg}
	}
	return []v1.NodeCondition{
		pressure(v1.NodeMemoryPressure, p.Memory, ReasonInsufficientMemory, MessageInsufficientMem, ReasonSufficientMemory, MessageSufficientMemory),
		pressure(v1.NodeDiskPressure, p.Disk, ReasonDiskPressure, MessageDiskPressure, ReasonNoDiskPressure, MessageNoDiskPressure),
		pressure(v1.NodePIDPressure, p.PID, ReasonInsufficientPID, MessageInsufficientPID, ReasonSufficientPID, MessageSufficientPID),
		readyCondition(capacity, r),
	}
}

// isKubeletCondition reports whether t is one of the conditions
// desiredConditions computes.
func isKubeletCondition(t v1.NodeConditionType) bool {
	switch t {
	case v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure:
		return true
	}
	return false
}

func readyCondition(capacity v1.ResourceList, r Readiness) v1.NodeCondition {
	errs := append([]string(nil), r.Errors...)
	if !r.RuntimeReady && len(r.Errors) == 0 {
		errs = append(errs, "container runtime not ready")
	}
	if !r.NetworkReady && len(r.Errors) == 0 {
		errs = append(errs, "container runtime network not ready")
	}
	var missing []string
	for _, name := range requiredCapacity {
		if _, ok := capacity[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, "missing node capacity for resources: "+strings.Join(missing, ", "))
	}
	if len(errs) == 0 {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonReady, Message: MessageReady}
	}
	msg := errs[0]
	if len(errs) > 1 {
		msg = "[" + strings.Join(errs, ", ") + "]"
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: ReasonNotReady, Message: msg}
}

// Conditions merges desired conditions into existing ones at time now:
// each desired condition gets lastHeartbeatTime now, and lastTransitionTime
// now only if it is new or its status differs from the existing one (else
// the existing transition time is kept). Existing conditions of other types
// (set by other agents, e.g. node-problem-detector) are kept, first.
func Conditions(existing, desired []v1.NodeCondition, now metav1.Time) []v1.NodeCondition {
	byType := make(map[v1.NodeConditionType]v1.NodeCondition, len(existing))
	for _, c := range existing {
		byType[c.Type] = c
	}
	owned := make(map[v1.NodeConditionType]bool, len(desired))
	for _, d := range desired {
		owned[d.Type] = true
	}
	var out []v1.NodeCondition
	for _, c := range existing {
		if !owned[c.Type] {
			out = append(out, c)
		}
	}
	for _, d := range desired {
		d.LastHeartbeatTime = now
		d.LastTransitionTime = now
		if old, ok := byType[d.Type]; ok && old.Status == d.Status && !old.LastTransitionTime.IsZero() {
			d.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, d)
	}
	return out
}

// StatusChanged reports whether status differs from original in anything
// but the conditions' heartbeat times.
func StatusChanged(original, status *v1.NodeStatus) bool {
	if original == nil || status == nil {
		return original != status
	}
	if conditionsChanged(original.Conditions, status.Conditions) {
		return true
	}
	a, b := original.DeepCopy(), status.DeepCopy()
	a.Conditions, b.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

func conditionsChanged(a, b []v1.NodeCondition) bool {
	if len(a) != len(b) {
		return true
	}
	norm := func(cs []v1.NodeCondition) []v1.NodeCondition {
		out := make([]v1.NodeCondition, len(cs))
		copy(out, cs)
		for i := range out {
			out[i].LastHeartbeatTime = metav1.Time{}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
		return out
	}
	return !equality.Semantic.DeepEqual(norm(a), norm(b))
}

// IsReady reports whether node's Ready condition is True.
func IsReady(node *v1.Node) bool {
	if node == nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
