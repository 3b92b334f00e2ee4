package nodestatus

import (
	"fmt"
	"strings"

	nodeutil "k8s.io/component-helpers/node/util"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// ConfigFrom builds a Config from a defaulted KubeletConfiguration and the
// flag-only settings (node name, hostname, --node-ip, --node-labels). It
// validates what it parses and names the field in its errors.
func ConfigFrom(kc *kubeletv1beta1.KubeletConfiguration, nodeName, hostname string, nodeIPs []string,
	nodeLabels map[string]string, kubeletVersion string) (Config, error) {
	if err := ValidateNodeLabels(nodeLabels); err != nil {
		return Config{}, err
	}
	kube, err := ParseReservation("kubeReserved", kc.KubeReserved)
	if err != nil {
		return Config{}, err
	}
	sys, err := ParseReservation("systemReserved", kc.SystemReserved)
	if err != nil {
		return Config{}, err
	}
	hard, err := ParseHardEviction(kc.EvictionHard)
	if err != nil {
		return Config{}, err
	}
	// --node-ip's rules (one IP or a dual-stack pair) are the library's,
	// as for the flag itself.
	ips, invalid, err := nodeutil.ParseNodeIPArgument(strings.Join(nodeIPs, ","), "")
	if len(invalid) > 0 {
		return Config{}, fmt.Errorf("--node-ip: %q is not an IP address", strings.Join(invalid, ", "))
	}
	if err != nil {
		return Config{}, fmt.Errorf("--node-ip: %w", err)
	}
	cad := kc.EnableControllerAttachDetach == nil || *kc.EnableControllerAttachDetach
	if hostname == "" {
		hostname = nodeName
	}
	return Config{
		NodeName:               nodeName,
		Hostname:               hostname,
		NodeLabels:             nodeLabels,
		Taints:                 kc.RegisterWithTaints,
		ProviderID:             kc.ProviderID,
		ControllerAttachDetach: cad,
		NodeIPs:                ips,
		MaxPods:                int64(kc.MaxPods),
		KubeletPort:            kc.Port,
		KubeletVersion:         kubeletVersion,
		KubeReserved:           kube,
		SystemReserved:         sys,
		HardEviction:           hard,
	}, nil
}
