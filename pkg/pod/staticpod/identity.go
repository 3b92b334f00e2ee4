package staticpod

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// The two priority classes every cluster has; a static pod cannot look up
// any other class, because it may run before there is an API server.
const (
	SystemNodeCritical    = "system-node-critical"
	SystemClusterCritical = "system-cluster-critical"

	SystemNodeCriticalPriority    = int32(2000001000)
	SystemClusterCriticalPriority = int32(2000000000)
)

var systemPriorities = map[string]int32{
	SystemNodeCritical:    SystemNodeCriticalPriority,
	SystemClusterCritical: SystemClusterCriticalPriority,
}

// StaticPodName is the name a static pod gets on a node, and its mirror pod
// in the API: the manifest's name, a dash, and the lowercased node name, so
// the same manifest on two nodes gives two distinct mirror pods.
func StaticPodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// applyIdentity makes a validated, defaulted pod a static pod of nodeName.
// namespace is the pod's namespace as the manifest wrote it ("" when
// absent), which enters the UID (see uidFor).
func applyIdentity(pod *v1.Pod, namespace, source, origin, nodeName string) field.ErrorList {
	// The UID hashes the pod as decoded and defaulted, before anything below
	// touches it, as upstream does.
	uid := pod.UID
	if uid == "" {
		uid = uidFor(pod, namespace, source, origin, nodeName)
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if class := pod.Spec.PriorityClassName; class != "" {
		if prio, ok := systemPriorities[class]; ok {
			if pod.Spec.Priority != nil && *pod.Spec.Priority != prio {
				errs = append(errs, field.Invalid(specPath.Child("priority"), *pod.Spec.Priority,
					fmt.Sprintf("must be %d, the value of priorityClassName %q, or unset", prio, class)))
			}
			pod.Spec.Priority = &prio
			if pod.Spec.PreemptionPolicy == nil {
				policy := v1.PreemptLowerPriority
				pod.Spec.PreemptionPolicy = &policy
			}
		}
	}
	name := StaticPodName(pod.Name, nodeName)
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pod.Name,
			fmt.Sprintf("with the node name appended (%q): %s", name, msg)))
	}
	if len(errs) > 0 {
		return errs
	}

	pod.UID = uid
	pod.Name = name
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podspec.ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[podspec.ConfigSourceAnnotation] = source

	// A static pod stays on its node whatever NoExecute taint the node gets:
	// there is nowhere else for it to go.
	tolerateAll := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	has := false
	for _, t := range pod.Spec.Tolerations {
		if t.Key == "" && t.Operator == v1.TolerationOpExists && t.Effect == v1.TaintEffectNoExecute && t.TolerationSeconds == nil {
			has = true
			break
		}
	}
	if !has {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, tolerateAll)
	}
	return nil
}
