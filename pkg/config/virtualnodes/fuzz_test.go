package virtualnodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzDecode feeds arbitrary VirtualNodes files to the decoder: it never
// panics, and what it accepts has nodes with valid, distinct names and
// ports, and paths made absolute.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nnodes:\n- {name: vn-1, provider: mock, port: 10260}\n"))
	f.Add([]byte("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nkubeconfig: rel/kc\nnodes:\n- {name: a, provider: kubernetes, port: 1, kubeconfig: k, providerConfig: {x: [1]}}\n- {name: a, provider: mock, port: 1}\n"))
	f.Add([]byte("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\naddress: not-an-ip\nkubeAPIQPS: -1\nnodes: [{name: ../x, provider: mock, port: 70000, taints: []}]\n"))
	files, _ := filepath.Glob("../../../examples/virtual-nodes*.yaml")
	more, _ := filepath.Glob("../../../examples/virtual-nodes/*.yaml")
	for _, p := range append(files, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data, "/etc/gokubelet")
		if err != nil {
			return
		}
		names, ports := map[string]bool{}, map[int32]bool{}
		for _, n := range c.Nodes {
			if len(validation.IsDNS1123Subdomain(n.Name)) > 0 || names[n.Name] {
				t.Fatalf("node name %q accepted", n.Name)
			}
			if n.Port <= 0 || n.Port > 65535 || ports[n.Port] {
				t.Fatalf("port %d accepted", n.Port)
			}
			names[n.Name], ports[n.Port] = true, true
			if n.Kubeconfig != "" && !strings.HasPrefix(n.Kubeconfig, "/") {
				t.Fatalf("relative kubeconfig %q left relative", n.Kubeconfig)
			}
		}
		if c.Kubeconfig != "" && !strings.HasPrefix(c.Kubeconfig, "/") {
			t.Fatalf("relative kubeconfig %q left relative", c.Kubeconfig)
		}
	})
}
