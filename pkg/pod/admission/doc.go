// Package admission decides whether the kubelet may run a pod on its node,
// as the upstream kubelet's predicate admission does, so that a pod the
// scheduler (or a static manifest) put here is rejected with the same
// status reason and message users know.
//
// Admit is pure: a function of the pod, the Node object and the pods
// already admitted, with no I/O and no clock. The caller (the sync loop)
// gathers the inputs, records a rejection in the pod's status (phase
// Failed, Reason and Message from the Result) and emits the event.
//
// Checks, in upstream's order; only the first failure is reported:
//  1. the pod's kubernetes.io/os label against the node's OS
//     (PodOSSelectorNodeLabelDoesNotMatch);
//  2. spec.os.name against the node's OS (PodOSNotSupported);
//  3. resource fit of the pod's effective requests against allocatable
//     minus what the admitted non-terminal pods request: pod count
//     (OutOfpods), cpu, memory, ephemeral-storage, then scalar resources
//     (extended resources, hugepages, ...) by name (OutOf<name>). Requests
//     of extended resources the node does not advertise are ignored, as
//     upstream does (cluster-level and DRA-backed resources);
//  4. nodeSelector and required node affinity (NodeAffinity);
//  5. spec.nodeName naming another node (NodeName);
//  6. host ports of app and sidecar containers against those of the
//     admitted pods (NodePorts);
//  7. NoExecute taints the pod does not tolerate, except for static pods
//     (TaintToleration). NoSchedule taints are the scheduler's business.
//
// The node's OS is its kubernetes.io/os label, or runtime.GOOS when the
// label is missing. Upstream uses runtime.GOOS alone; the label is
// preferred here so a virtual node that reports its provider's OS admits
// the pods the scheduler sent it.
//
// Critical pods (static, mirror, or priority >= 2000000000) are admitted
// when every failure is a resource shortage: upstream would evict lower
// priority pods to make room, which this kubelet does not do yet, so the
// node may be overcommitted; Result.Message then says so. Their other
// failures (affinity, ports, OS, ...) still reject them, as upstream.
package admission
