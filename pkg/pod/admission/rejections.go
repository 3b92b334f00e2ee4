package admission

import "strings"

// rejectionLabels are the reasons upstream's kubelet counts under their own
// name in kubelet_admission_rejections_total; any other reason is counted
// as OutOfExtendedResources (a shortage of a resource not listed) or
// Other, which keeps the metric's label set bounded whatever a handler
// returns. The list is upstream's at 1.37, its oddity included: a taint
// rejection's reason is TaintToleration, but the list holds the scheduler
// plugin's description instead, so upstream counts taints as Other too.
var rejectionLabels = map[string]bool{
	ReasonAppArmor:                             true,
	ReasonOSSelectorMismatch:                   true,
	ReasonOSNotSupported:                       true,
	ReasonInvalidNodeInfo:                      true,
	"InitContainerRestartPolicyForbidden":      true,
	ReasonSupplementalGroupsPolicyNotSupported: true,
	"UnexpectedAdmissionError":                 true,
	"UnknownReason":                            true,
	"UnexpectedPredicateFailureType":           true,
	ReasonOutOfCPU:                             true,
	ReasonOutOfMemory:                          true,
	ReasonOutOfEphemeral:                       true,
	ReasonOutOfPods:                            true,
	ReasonPodLevelResourcesNotSupported:        true,
	"PodFeatureUnsupported":                    true,
	descTaintToleration:                        true,
	"Evicted":                                  true,
	ReasonSysctlForbidden:                      true,
	"TopologyAffinityError":                    true,
	"NodeShutdown":                             true,
	"VolumeAttachmentLimitExceeded":            true,
}

// RejectionLabel is the reason label under which a rejection with the given
// status reason is counted.
func RejectionLabel(reason string) string {
	switch {
	case rejectionLabels[reason]:
		return reason
	case strings.HasPrefix(reason, ReasonInsufficientPrefix):
		return "OutOfExtendedResources"
	default:
		return "Other"
	}
}
