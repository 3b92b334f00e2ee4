package staticpod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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

// uidFor derives a static pod's UID. As upstream does, it is a hash of the
// pod content together with where it came from: for a file the node name
// and the file path (the same file on two nodes, or two copies of one file,
// are distinct pods), for HTTP the URL. The same bytes from the same place
// thus always give the same UID (a kubelet restart finds its pods again)
// and any edit gives a new one (an edited static pod is replaced, not
// updated in place). It is hex, 32 characters, like upstream's.
func uidFor(pod *v1.Pod, source, origin, nodeName string) (types.UID, error) {
	content, err := json.Marshal(pod)
	if err != nil {
		return "", fmt.Errorf("hashing pod: %w", err)
	}
	h := sha256.New()
	h.Write(content)
	switch source {
	case podspec.SourceFile:
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", origin)
	default:
		fmt.Fprintf(h, "url:%s", origin)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16])), nil
}

// applyIdentity makes a validated, defaulted pod a static pod of nodeName.
func applyIdentity(pod *v1.Pod, source, origin, nodeName string) field.ErrorList {
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

	if pod.UID == "" {
		uid, err := uidFor(pod, source, origin, nodeName)
		if err != nil {
			return field.ErrorList{field.InternalError(field.NewPath("metadata", "uid"), err)}
		}
		pod.UID = uid
	}
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
