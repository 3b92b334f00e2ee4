package kubeletconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeIn(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The drop-in rules of the upstream kubelet: *.conf files under the
// directory (subdirectories too) in lexical path order, each a JSON merge
// patch over the file so far (later files win, maps merge key by key, lists
// are replaced, null removes), and flags given on the command line win over
// all of them.
func TestConfigDirDropIns(t *testing.T) {
	dir := t.TempDir()
	cfg := writeIn(t, dir, "kubelet.yaml", header+"maxPods: 10\nclusterDNS: [10.0.0.10, 10.0.0.11]\nevictionHard:\n  memory.available: 100Mi\n  nodefs.available: 10%\nsyncFrequency: 30s\n")
	d := filepath.Join(dir, "kubelet.conf.d")
	writeIn(t, d, "20-pods.conf", header+"maxPods: 20\nclusterDNS: [10.0.0.53]\n")
	writeIn(t, d, "10-pods.conf", header+"maxPods: 15\nkubeAPIQPS: 7\n")
	writeIn(t, d, "30-eviction.conf", header+"evictionHard:\n  memory.available: 300Mi\n  nodefs.available: null\n")
	writeIn(t, d, "40-sub/50-x.conf", header+"kubeAPIBurst: 77\n")
	writeIn(t, d, "99-ignored.yaml", header+"maxPods: 99\n")
	writeIn(t, d, "25-unknown.conf", header+"notAField: 1\nkubeAPIQPS: 8\n")

	s, err := NewSettings([]string{"--config", cfg, "--config-dir", d, "--hostname-override=n1", "--sync-frequency=45s"})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config
	if c.MaxPods != 20 {
		t.Errorf("maxPods = %d, want 20 (the last .conf in order wins; .yaml ignored)", c.MaxPods)
	}
	if strings.Join(c.ClusterDNS, ",") != "10.0.0.53" {
		t.Errorf("clusterDNS = %v, want the list replaced whole", c.ClusterDNS)
	}
	if c.EvictionHard["memory.available"] != "300Mi" {
		t.Errorf("evictionHard = %v, want memory.available merged to 300Mi", c.EvictionHard)
	}
	if _, ok := c.EvictionHard["nodefs.available"]; ok {
		t.Errorf("evictionHard = %v, want nodefs.available removed by null", c.EvictionHard)
	}
	if *c.KubeAPIQPS != 8 || c.KubeAPIBurst != 77 {
		t.Errorf("kubeAPIQPS=%d kubeAPIBurst=%d, want 8 (25-unknown after 10-pods) and 77 (subdirectory)", *c.KubeAPIQPS, c.KubeAPIBurst)
	}
	if c.SyncFrequency.Duration.String() != "45s" {
		t.Errorf("syncFrequency = %v, want the flag's 45s", c.SyncFrequency)
	}
	if c.FileCheckFrequency.Duration.String() != "20s" {
		t.Errorf("defaults lost: fileCheckFrequency = %v", c.FileCheckFrequency)
	}
	want := []string{"10-pods.conf", "20-pods.conf", "25-unknown.conf", "30-eviction.conf", "40-sub/50-x.conf"}
	if len(s.DropIns) != len(want) {
		t.Fatalf("drop-ins applied %v", s.DropIns)
	}
	for i, w := range want {
		if !strings.HasSuffix(s.DropIns[i], w) {
			t.Errorf("drop-in %d = %s, want %s", i, s.DropIns[i], w)
		}
	}
	warned := strings.Join(s.Warnings, "\n")
	if !strings.Contains(warned, "25-unknown.conf") || !strings.Contains(warned, "notAField") {
		t.Errorf("the unknown field of a drop-in is not named in a warning:\n%s", warned)
	}
}

func TestConfigDirErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"no-kind.conf":    "maxPods: 3\n",
		"wrong-kind.conf": "apiVersion: v1\nkind: Pod\n",
		"empty.conf":      "",
		"bad-yaml.conf":   header + "maxPods: [\n",
		// Upstream refuses a duplicated field in a drop-in (strict
		// decoding into an unstructured object, no lenient fallback).
		"duplicate.conf": header + "maxPods: 3\nmaxPods: 4\n",
	} {
		d := filepath.Join(dir, strings.TrimSuffix(name, ".conf"))
		p := writeIn(t, d, name, content)
		_, err := NewSettings([]string{"--config-dir", d, "--hostname-override=n1"})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
		if name == "duplicate.conf" && (err == nil || !strings.Contains(err.Error(), `duplicate field "maxPods"`)) {
			t.Errorf("%s: error %v, want one naming the field", name, err)
		}
	}
	if _, err := NewSettings([]string{"--config-dir", filepath.Join(dir, "missing"), "--hostname-override=n1"}); err == nil {
		t.Error("a missing --config-dir was accepted")
	}
	// Without --config, drop-ins apply over the defaults; validation still runs.
	d := filepath.Join(dir, "invalid")
	writeIn(t, d, "10.conf", header+"healthzPort: 70000\n")
	if _, err := NewSettings([]string{"--config-dir", d, "--hostname-override=n1"}); err == nil || !strings.Contains(err.Error(), "healthzPort") {
		t.Errorf("an invalid value from a drop-in: %v", err)
	}
}
