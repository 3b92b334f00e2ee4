package virtualnodes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

const good = `apiVersion: gokubelet.io/v1alpha1
kind: VirtualNodes
kubeconfig: vn.kubeconfig
realNode: false
instance: lab-1
address: 192.0.2.10
nodes:
- name: vk-mock
  provider: mock
  port: 10260
  providerConfig:
    startDelay: 1s
  capacity: {pods: "500"}
  podSync: {workers: 10, retryBase: 50ms}
- name: vk-remote
  provider: kubernetes
  port: 10261
  taints: []
  labels: {example.com/pool: burst}
  kubeconfig: /abs/node.kubeconfig
  providerConfig: {kubeconfig: target.kubeconfig}
`

func TestDecode(t *testing.T) {
	c, err := Decode([]byte(good), "/etc/gk")
	if err != nil {
		t.Fatal(err)
	}
	if c.RunsRealNode() || c.Kubeconfig != "/etc/gk/vn.kubeconfig" || c.Instance != "lab-1" || c.QPS() != DefaultKubeAPIQPS || c.Burst() != DefaultKubeAPIBurst {
		t.Errorf("top level = %+v", c)
	}
	if len(c.Nodes) != 2 {
		t.Fatalf("nodes = %d", len(c.Nodes))
	}
	mock, remote := c.Nodes[0], c.Nodes[1]
	if taints := mock.EffectiveTaints(); len(taints) != 1 || taints[0].Key != TaintKey || taints[0].Value != "mock" || taints[0].Effect != v1.TaintEffectNoSchedule {
		t.Errorf("default taint = %+v", taints)
	}
	if taints := remote.EffectiveTaints(); len(taints) != 0 {
		t.Errorf("taints: [] must mean none, got %+v", taints)
	}
	if q := mock.CapacityList()[v1.ResourcePods]; q.Value() != 500 {
		t.Errorf("capacity = %v", mock.CapacityList())
	}
	if string(mock.ProviderConfig) != `{"startDelay":"1s"}` {
		t.Errorf("providerConfig = %s", mock.ProviderConfig)
	}
	if remote.Kubeconfig != "/abs/node.kubeconfig" || mock.PodSync.Workers != 10 || mock.PodSync.RetryBase.Duration != 50*time.Millisecond {
		t.Errorf("node fields: %+v %+v", remote, mock.PodSync)
	}
	// A node without a kubeconfig obtains its own identity unless it
	// asks for the file's.
	if mock.Identity != IdentityBootstrap || remote.Identity != "" {
		t.Errorf("identities: mock %q, remote (own kubeconfig) %q", mock.Identity, remote.Identity)
	}
	shared, err := Decode([]byte("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nnodes:\n- {name: a, provider: mock, port: 1, identity: shared}\n"), "")
	if err != nil || shared.Nodes[0].Identity != IdentityShared {
		t.Errorf("identity: shared: %v %+v", err, shared)
	}
	if !mock.Equal(&c.Nodes[0]) || mock.Equal(&remote) {
		t.Error("Equal")
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	head := "apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\n"
	for name, tc := range map[string]struct{ body, want string }{
		"kind":           {"apiVersion: v1\nkind: Pod\nnodes: []\n", "apiVersion/kind"},
		"unknown field":  {head + "nodes: []\nbogus: 1\n", "bogus"},
		"no name":        {head + "nodes:\n- {provider: mock, port: 1}\n", "nodes[0].name"},
		"bad name":       {head + "nodes:\n- {name: Bad_Name, provider: mock, port: 1}\n", "nodes[Bad_Name].name"},
		"duplicate":      {head + "nodes:\n- {name: a, provider: mock, port: 1}\n- {name: a, provider: mock, port: 2}\n", "Duplicate value"},
		"no provider":    {head + "nodes:\n- {name: a, port: 1}\n", "nodes[a].provider"},
		"no port":        {head + "nodes:\n- {name: a, provider: mock}\n", "nodes[a].port"},
		"same port":      {head + "nodes:\n- {name: a, provider: mock, port: 1}\n- {name: b, provider: mock, port: 1}\n", "nodes[b].port"},
		"refused label":  {head + "nodes:\n- {name: a, provider: mock, port: 1, labels: {node-role.kubernetes.io/x: \"\"}}\n", "nodes[a].labels"},
		"bad taint":      {head + "nodes:\n- {name: a, provider: mock, port: 1, taints: [{key: k, effect: Sometimes}]}\n", "nodes[a].taints[0].effect"},
		"bad capacity":   {head + "nodes:\n- {name: a, provider: mock, port: 1, capacity: {cpu: lots}}\n", "nodes[a].capacity[cpu]"},
		"bad address":    {head + "address: here\nnodes: []\n", "address"},
		"negative delay": {head + "nodes:\n- {name: a, provider: mock, port: 1, podSync: {retryMax: -1s}}\n", "podSync.retryMax"},
		"bad identity":   {head + "nodes:\n- {name: a, provider: mock, port: 1, identity: mine}\n", "nodes[a].identity"},
		"two identities": {head + "nodes:\n- {name: a, provider: mock, port: 1, identity: bootstrap, kubeconfig: /k}\n", "nodes[a].identity"},
		"shared and own": {head + "nodes:\n- {name: a, provider: mock, port: 1, identity: shared, kubeconfig: /k}\n", "nodes[a].identity"},
	} {
		_, err := Decode([]byte(tc.body), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
}

// Watch reports valid changes and ignores invalid ones.
func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vn.yaml")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []*Config
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Watch(ctx, path, 10*time.Millisecond, []byte(good), func(c *Config) { mu.Lock(); seen = append(seen, c); mu.Unlock() })
		close(done)
	}()
	defer func() { cancel(); <-done }()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	time.Sleep(50 * time.Millisecond)
	if count() != 0 {
		t.Fatal("an unchanged file was reported")
	}
	if err := os.WriteFile(path, []byte("apiVersion: nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if count() != 0 {
		t.Fatal("an invalid file was reported")
	}
	one := strings.Split(good, "- name: vk-remote")[0]
	if err := os.WriteFile(path, []byte(one), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the change reported", func() bool { return count() != 0 })
	mu.Lock()
	defer mu.Unlock()
	if len(seen[0].Nodes) != 1 || seen[0].Nodes[0].Name != "vk-mock" {
		t.Errorf("reported %+v", seen[0].Nodes)
	}
}

func TestBootstrapsServing(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		file    *bool
		kubelet bool
		want    bool
	}{
		{nil, false, false}, {nil, true, true},
		{&yes, false, true}, {&yes, true, true},
		{&no, true, false}, {&no, false, false},
	} {
		if got := BootstrapsServing(tc.file, tc.kubelet); got != tc.want {
			t.Errorf("BootstrapsServing(%v, %v) = %v", tc.file, tc.kubelet, got)
		}
	}
	c, err := Decode([]byte("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nserverTLSBootstrap: false\nnodes: []\n"), "/")
	if err != nil || c.ServerTLSBootstrap == nil || *c.ServerTLSBootstrap {
		t.Errorf("serverTLSBootstrap: false decoded as %v (%v)", c, err)
	}
}
