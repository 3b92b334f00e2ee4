package admission

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Status reasons of a rejected pod. The values are upstream's: users and
// tools match on them.
const (
	ReasonInvalidNodeInfo    = "InvalidNodeInfo"
	ReasonOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported     = "PodOSNotSupported"
	// ReasonInsufficientPrefix + resource name is the reason of a resource
	// shortage: OutOfcpu, OutOfmemory, OutOfephemeral-storage, OutOfpods,
	// OutOfexample.com/gpu.
	ReasonInsufficientPrefix = "OutOf"
	ReasonOutOfCPU           = "OutOfcpu"
	ReasonOutOfMemory        = "OutOfmemory"
	ReasonOutOfEphemeral     = "OutOfephemeral-storage"
	ReasonOutOfPods          = "OutOfpods"
	// The reasons of the other predicates are the scheduler plugins' names.
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"
)

// Descriptions the scheduler plugins give for a failed predicate; they end
// up in the message "Predicate <reason> failed: <description>".
const (
	descNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	descNodeName        = "node(s) didn't match the requested node name"
	descNodePorts       = "node(s) didn't have free ports for the requested pod ports"
	descTaintToleration = "node(s) had taints that the pod didn't tolerate"
)

// Result is the admission decision. When Admit is false, Reason and
// Message go to the pod's status. Preempt, on an admitted critical pod,
// are the shortages other pods must be preempted to cover (Preemption
// chooses them); Message then says what was short.
type Result struct {
	Admit   bool
	Reason  string
	Message string
	Preempt []Shortage
}

// failure is one failed check; insufficient is set for a resource
// shortage, whose size is shortage.
type failure struct {
	reason       string
	message      string
	insufficient bool
	shortage     Shortage
}

// Admit decides whether pod may run on node, given the pods already
// admitted to it. Terminal pods (Succeeded, Failed), mirror pods and pod
// itself (same UID) in admitted are not counted. It reads its arguments
// and never modifies them.
func Admit(pod *v1.Pod, node *v1.Node, admitted []*v1.Pod) Result {
	if node == nil {
		return Result{Reason: ReasonInvalidNodeInfo, Message: "Kubelet cannot get node info."}
	}
	// Checks preemption could not help come first.
	if osSelectorMismatch(pod, node) {
		return Result{Reason: ReasonOSSelectorMismatch,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS(node) {
		return Result{Reason: ReasonOSNotSupported,
			Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}

	others := make([]*v1.Pod, 0, len(admitted))
	for _, p := range admitted {
		if p == nil || p.UID == pod.UID || podspec.IsMirror(p) ||
			p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		others = append(others, p)
	}

	failures := generalFilter(pod, node, others)
	if len(failures) == 0 {
		return Result{Admit: true}
	}
	if podspec.IsCritical(pod) {
		// A critical pod is admitted by preempting other pods when every
		// failure is a shortage, as upstream; other failures still
		// reject it.
		var other []failure
		var short []Shortage
		for _, f := range failures {
			if f.insufficient {
				short = append(short, f.shortage)
			} else {
				other = append(other, f)
			}
		}
		if len(other) == 0 {
			return Result{Admit: true, Message: failures[0].message, Preempt: short}
		}
		failures = other
	}
	return Result{Reason: failures[0].reason, Message: failures[0].message}
}

// generalFilter runs the resource, affinity, node name, port and taint
// checks and returns every failure, in upstream's order.
func generalFilter(pod *v1.Pod, node *v1.Node, others []*v1.Pod) []failure {
	failures := fitResources(pod, node, others)
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		failures = append(failures, predicateFailure(ReasonNodeAffinity, descNodeAffinity))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		failures = append(failures, predicateFailure(ReasonNodeName, descNodeName))
	}
	if portsConflict(pod, others) {
		failures = append(failures, predicateFailure(ReasonNodePorts, descNodePorts))
	}
	if !podspec.IsStatic(pod) {
		// Lt/Gt tolerations stay unmatched: they belong to the alpha gate
		// TaintTolerationComparisonOperators (off by default), which this
		// kubelet does not act on.
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false)
		if untolerated {
			failures = append(failures, predicateFailure(ReasonTaintToleration, descTaintToleration))
		}
	}
	return failures
}

func predicateFailure(name, desc string) failure {
	return failure{reason: name, message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// nodeOS is the node's kubernetes.io/os label, or this machine's OS when
// the label is missing.
func nodeOS(node *v1.Node) string {
	if os, ok := node.Labels[v1.LabelOSStable]; ok && os != "" {
		return os
	}
	return runtime.GOOS
}

// osSelectorMismatch: a pod labelled kubernetes.io/os must carry the
// node's OS. Pods without the label pass.
func osSelectorMismatch(pod *v1.Pod, node *v1.Node) bool {
	want, ok := pod.Labels[v1.LabelOSStable]
	return ok && want != nodeOS(node)
}
