// Package podspec is the one home of the rules that read a pod's spec and
// that every part of the kubelet must agree on: where a pod came from
// (static, mirror, API) and how it is named in messages; its QoS class; what
// its restart policy means for a container that exited; which init
// containers are sidecars; finding a container of the spec by name; which
// volume mounts are recursive read-only.
//
// Each rule is written once, here, as a pure function of the pod, and
// imported by the status computation (pod/podstatus), the CRI runtime
// (runtime/kuberuntime), the status writer (node/statuswriter), admission
// and the probers alike, so they cannot disagree. Nothing here does I/O or
// keeps state.
package podspec
