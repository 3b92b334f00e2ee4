package nodestatus

import (
	"fmt"
	"net"
	"strings"

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
	var ips []net.IP
	for _, s := range nodeIPs {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			ip := net.ParseIP(part)
			if ip == nil {
				return Config{}, fmt.Errorf("--node-ip: %q is not an IP address", part)
			}
			ips = append(ips, ip)
		}
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
