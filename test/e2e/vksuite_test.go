package e2e

import (
	"path/filepath"
	"testing"

	"github.com/gokubelet/kubelet/test/framework"

	vke2e "github.com/virtual-kubelet/virtual-kubelet/test/e2e"
)

// vkSuiteSkips are the tests of Virtual Kubelet's suite that cannot pass
// here by design, each with the reason.
var vkSuiteSkips = map[string]string{
	// Both reach the kubelet API through the API server's *pod* proxy:
	// https:<node name>:10250 as a pod of the test namespace, so they need
	// a pod named after the node that serves the kubelet API on its pod IP
	// at port 10250. That is how Virtual Kubelet is deployed (one pod per
	// node); here a virtual node is a part of the kubelet process and
	// serves its API on its Node's address at the port its
	// daemonEndpoints advertise (10261 for vk-mock). The same endpoints
	// are checked through the node proxy at that port by
	// TestVirtualNodes/KubeletAPIServesItsPods.
	"TestGetStatsSummary":    "reaches the kubelet API as a pod named after the node at port 10250 (Virtual Kubelet's deployment), not at the Node's advertised endpoint",
	"TestGetMetricsResource": "reaches the kubelet API as a pod named after the node at port 10250 (Virtual Kubelet's deployment), not at the Node's advertised endpoint",
}

// TestVirtualKubeletSuite runs Virtual Kubelet's own end-to-end suite
// (github.com/virtual-kubelet/virtual-kubelet/test/e2e, the version in
// go.mod) against the mock-backed virtual node, through kubectl's API
// server as a user would.
func TestVirtualKubeletSuite(t *testing.T) {
	node(t)
	waitNodeReady(t, vkMock, framework.WaitLimit)
	ns := namespace(t)
	vke2e.NewEndToEndTestSuite(vke2e.EndToEndTestSuiteConfig{
		Kubeconfig: filepath.Join(clusterDir, "admin.kubeconfig"),
		Namespace:  ns,
		NodeName:   vkMock,
		ShouldSkipTest: func(name string) bool {
			reason, skip := vkSuiteSkips[name]
			if skip {
				t.Logf("skipping %s: %s", name, reason)
			}
			return skip
		},
	}).Run(t)
}
