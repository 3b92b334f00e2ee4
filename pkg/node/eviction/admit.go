package eviction

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Admit decides whether a new pod may start under the node's pressure
// conditions, as upstream: anything without pressure; critical pods
// always; under memory pressure alone, pods that are not best-effort and
// best-effort pods tolerating the memory-pressure taint; under any other
// pressure, nothing else. A refusal has reason Evicted and names the
// conditions.
func Admit(pod *v1.Pod, conds []v1.NodeConditionType) (bool, string, string) {
	if len(conds) == 0 || podspec.IsCritical(pod) {
		return true, "", ""
	}
	if len(conds) == 1 && conds[0] == v1.NodeMemoryPressure {
		if podspec.QOSClass(pod) != v1.PodQOSBestEffort {
			return true, "", ""
		}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}, false) {
			return true, "", ""
		}
	}
	return false, Reason, ConditionMessage(conds)
}
