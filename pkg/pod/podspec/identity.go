package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Source names where a pod came from. The values are upstream's and are
// written to the kubernetes.io/config.source annotation.
const (
	SourceFile = "file"
	SourceHTTP = "http"
	SourceAPI  = "api"
)

// Annotations the kubelet writes on the pods it takes in, as upstream does.
const (
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	ConfigHashAnnotation   = "kubernetes.io/config.hash"
	ConfigSeenAnnotation   = "kubernetes.io/config.seen"
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
)

// SystemCriticalPriority is the lowest priority of a system-critical pod
// (upstream's scheduling.SystemCriticalPriority: 2 * 10^9).
const SystemCriticalPriority int32 = 2 * 1000000000

// IsStatic reports whether the pod came from a source other than the API
// server (a manifest file or URL), as upstream counts it: it carries a
// config.source annotation that does not name the API server.
func IsStatic(pod *v1.Pod) bool {
	src, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && src != SourceAPI
}

// IsMirror reports whether the pod is a mirror pod: the API server's copy of
// a static pod, made by the kubelet.
func IsMirror(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// IsCritical reports whether the pod is critical to the node: static or
// mirror, or with a priority of at least SystemCriticalPriority. Critical
// pods are admitted and evicted last.
func IsCritical(pod *v1.Pod) bool {
	if IsStatic(pod) || IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// FullName is namespace/name: how pods with the same name from different
// sources (a static pod and its mirror) are matched.
func FullName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Format is the pod as upstream names it in messages users read (back-off
// messages, events): name_namespace(uid).
func Format(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
