package kubeletconfig

import (
	"os"
	"path/filepath"
	"testing"
)

const fuzzSeedConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
evictionHard: {memory.available: 100Mi}
featureGates: {KubeletFineGrainedAuthz: true}
port: 10250
`

// FuzzDecodeConfig feeds arbitrary files to the KubeletConfiguration
// decoder: it never panics, and a configuration it accepts can be
// defaulted and validated without panicking either.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(fuzzSeedConfig))
	f.Add([]byte(`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":-1,"port":70000}`))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 1\nport: 2\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstreamingConnectionIdleTimeout: 1e9h\nevictionHard: {memory.available: 200%}\n"))
	f.Add([]byte("&a [*a, *a, *a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := DecodeConfig(data)
		if err != nil {
			return
		}
		SetDefaults(cfg)
		_ = Validate(cfg)
	})
}

// FuzzDropIn merges an arbitrary drop-in file onto a valid configuration:
// never a panic, and an accepted merge still validates without panicking.
func FuzzDropIn(f *testing.F) {
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nevictionHard: null\nfeatureGates: {NoSuchGate: true}\n"))
	f.Add([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nunknownField: 1\n"))
	f.Add([]byte(`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","authentication":{"x509":null}}`))
	base, _, err := DecodeConfig([]byte(fuzzSeedConfig))
	if err != nil {
		f.Fatal(err)
	}
	SetDefaults(base)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "10-fuzz"+DropInExtension), data, 0o644); err != nil {
			t.Fatal(err)
		}
		merged, _, _, err := MergeDropIns(base.DeepCopy(), dir)
		if err != nil {
			return
		}
		if merged == nil {
			t.Fatal("no configuration and no error")
		}
		_ = Validate(merged)
	})
}
