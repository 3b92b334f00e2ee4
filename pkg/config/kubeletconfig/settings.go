package kubeletconfig

import (
	"k8s.io/component-base/featuregate"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
)

// Settings is everything the kubelet is started with: the defaulted and
// validated KubeletConfiguration (file, then flags on top) plus the settings
// that upstream keeps as flags only.
type Settings struct {
	// Config is the effective configuration, defaults applied.
	Config *kubeletv1beta1.KubeletConfiguration
	// ConfigFile is the --config path ("" when none).
	ConfigFile string
	// ConfigDir is --config-dir ("" when none) and DropIns the files of it
	// that were merged, in order.
	ConfigDir string
	DropIns   []string
	// FeatureGates is the effective feature gate (Config.FeatureGates
	// applied to every gate of the upstream kubelet).
	FeatureGates featuregate.FeatureGate
	// Features answers, for the code, whether each gate this kubelet
	// wires is on (see pkg/config/features).
	Features features.Gates

	// KubeconfigPath is --kubeconfig; empty means standalone mode (no API
	// server).
	KubeconfigPath string
	// BootstrapKubeconfigPath is --bootstrap-kubeconfig.
	BootstrapKubeconfigPath string
	// NodeName is the node's name: --hostname-override, else the hostname,
	// lowercased.
	NodeName string
	// NodeIPs are the parsed --node-ip values (at most one per family).
	NodeIPs []string
	// RootDir is --root-dir (default /var/lib/kubelet).
	RootDir string
	// RuntimeCgroups is --runtime-cgroups: the runtime's cgroup, reported
	// as the system container "runtime".
	RuntimeCgroups string
	// CertDir is --cert-dir (default <root-dir>/pki).
	CertDir string
	// NodeLabels are --node-labels.
	NodeLabels map[string]string
	// VirtualNodesConfigFile is --virtual-nodes-config ("" when none), and
	// VirtualNodes its content, validated.
	VirtualNodesConfigFile string
	VirtualNodes           *virtualnodes.Config
	// MaxStreamsPerCaller is --max-streams-per-caller: how many container
	// log and stream requests one caller of the kubelet API may have open at
	// once (0: no bound).
	MaxStreamsPerCaller int
	// Warnings are messages about accepted but unimplemented settings, to be
	// logged at start.
	Warnings []string
}

// Standalone reports whether the kubelet runs without an API server (no
// --kubeconfig and no --bootstrap-kubeconfig): static pods only, no Node
// registration.
func (s *Settings) Standalone() bool {
	return s.KubeconfigPath == "" && s.BootstrapKubeconfigPath == ""
}

// RunsRealNode reports whether this machine's own node runs (false only
// when a virtual nodes config says realNode: false).
func (s *Settings) RunsRealNode() bool {
	return s.VirtualNodes == nil || s.VirtualNodes.RunsRealNode()
}
