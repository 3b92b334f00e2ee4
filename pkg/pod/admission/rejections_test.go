package admission

import "testing"

func TestRejectionLabel(t *testing.T) {
	for reason, want := range map[string]string{
		ReasonOutOfCPU:                      "OutOfcpu",
		ReasonOutOfPods:                     "OutOfpods",
		"OutOfexample.com/gpu":              "OutOfExtendedResources",
		"OutOfhugepages-2Mi":                "OutOfExtendedResources",
		ReasonAppArmor:                      "AppArmor",
		ReasonSysctlForbidden:               "SysctlForbidden",
		ReasonPodLevelResourcesNotSupported: "PodLevelResourcesNotSupported",
		"Evicted":                           "Evicted",
		"NodeShutdown":                      "NodeShutdown",
		ReasonOSNotSupported:                "PodOSNotSupported",
		// Upstream counts these as Other: not on its list.
		ReasonTaintToleration:                   "Other",
		ReasonNodeAffinity:                      "Other",
		ReasonNodePorts:                         "Other",
		ReasonInvalidUID:                        "Other",
		ReasonContainerRestartRulesNotSupported: "Other",
		"":                                      "Other",
		"anything a handler made up":            "Other",
	} {
		if got := RejectionLabel(reason); got != want {
			t.Errorf("RejectionLabel(%q) = %q, want %q", reason, got, want)
		}
	}
}
