package nodestatus

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestConfigFrom(t *testing.T) {
	kc := &kubeletv1beta1.KubeletConfiguration{
		Port: 10250, MaxPods: 110,
		KubeReserved:       map[string]string{"cpu": "100m"},
		EvictionHard:       map[string]string{"memory.available": "100Mi"},
		RegisterWithTaints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}},
	}
	cfg, err := ConfigFrom(kc, "n1", "", []string{"10.0.0.1,fd00::1"}, map[string]string{"example.com/a": "b"}, "v1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hostname != "n1" || cfg.MaxPods != 110 || cfg.KubeletPort != 10250 || len(cfg.NodeIPs) != 2 ||
		!cfg.ControllerAttachDetach || len(cfg.Taints) != 1 || len(cfg.HardEviction) != 1 || cfg.KubeReserved.Cpu().MilliValue() != 100 {
		t.Fatalf("cfg = %+v", cfg)
	}
	for name, tc := range map[string]struct {
		kc     kubeletv1beta1.KubeletConfiguration
		ips    []string
		labels map[string]string
		want   string
	}{
		"bad ip":        {ips: []string{"nope"}, want: "--node-ip"},
		"two IPv4":      {ips: []string{"10.0.0.1", "10.0.0.2"}, want: "dual-stack pair"},
		"bad reserved":  {kc: kubeletv1beta1.KubeletConfiguration{SystemReserved: map[string]string{"memory": "x"}}, want: "systemReserved[memory]"},
		"bad eviction":  {kc: kubeletv1beta1.KubeletConfiguration{EvictionHard: map[string]string{"nodefs.available": "200%"}}, want: "evictionHard[nodefs.available]"},
		"refused label": {labels: map[string]string{"node-role.kubernetes.io/worker": ""}, want: "node-role.kubernetes.io/worker"},
	} {
		_, err := ConfigFrom(&tc.kc, "n1", "h", tc.ips, tc.labels, "v")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want one naming %q", name, err, tc.want)
		}
	}
}
