package nodeset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
)

// The nodes act as the file's identity (the fake clientset's): a node
// identity would need a CSR signed by a control plane.
const vnFile = `apiVersion: gokubelet.io/v1alpha1
kind: VirtualNodes
instance: unit
nodes:
- {name: vn-a, provider: mock, port: 10260, identity: shared}
`

const vnB = `- {name: vn-b, provider: mock, port: 10261, identity: shared}
`

// The virtual nodes follow their file: at start, a node this process
// registered (its own record under the root dir) that the file no longer
// lists is deleted; the listed ones register and run
// pods; a node taken out of the file is drained and deleted while the
// other one runs on.
func TestVirtualNodesFollowTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vn.yaml")
	if err := os.WriteFile(path, []byte(vnFile+vnB), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := virtualnodes.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	stale := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vn-old", UID: "old", Labels: map[string]string{virtualnodes.LabelInstance: "unit"}}}
	foreign := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vn-foreign", UID: "f", Labels: map[string]string{virtualnodes.LabelInstance: "other"}}}
	// Labelled as this instance's by someone who may label nodes, never
	// registered by this process.
	labelled := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vn-labelled", UID: "l", Labels: map[string]string{virtualnodes.LabelInstance: "unit"}}}
	// Registered by this process once, now someone else's.
	reused := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vn-reused", UID: "r", Labels: map[string]string{virtualnodes.LabelInstance: "other"}}}
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "virtual-nodes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "virtual-nodes", "registered.json"), []byte(`{"nodes":["vn-old","vn-reused","vn-a"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid"},
		Spec: v1.PodSpec{NodeName: "vn-b", Containers: []v1.Container{{Name: "c", Image: "i"}}}}
	client := fake.NewClientset(stale, foreign, labelled, reused, pod)
	var n atomic.Int64
	client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			o.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Add(1))))
		}
		return false, nil, nil
	})
	s := &kubeletconfig.Settings{Config: kubeletconfig.NewDefaultConfig(), KubeconfigPath: "/unused",
		VirtualNodesConfigFile: path, VirtualNodes: cfg, RootDir: root}
	v, err := New(s, []string{"192.0.2.1"}, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	v.newClients = func(string) (*node.Clients, error) { return &node.Clients{Kube: client, Events: client}, nil }
	v.watchInterval = 20 * time.Millisecond
	var apiMu sync.Mutex
	apis := map[string]*fakeAPI{}
	v.API = func(_ context.Context, a NodeAPI) (APIServer, error) {
		apiMu.Lock()
		defer apiMu.Unlock()
		f := &fakeAPI{def: a, started: make(chan struct{})}
		apis[a.Name] = f
		return f, nil
	}
	apiOf := func(name string) *fakeAPI {
		apiMu.Lock()
		defer apiMu.Unlock()
		return apis[name]
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	getNode := func(name string) (*v1.Node, error) {
		return client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	}
	for _, name := range []string{"vn-a", "vn-b"} {
		eventually.Seen(t, name+" registered Ready", func() (bool, string) {
			n, err := getNode(name)
			if err != nil {
				return false, err.Error()
			}
			return nodestatus.IsReady(n), fmt.Sprint(n.Status.Conditions)
		})
	}
	if _, err := getNode("vn-old"); !apierrors.IsNotFound(err) {
		t.Errorf("the stale node of this instance: %v, want deleted", err)
	}
	if _, err := getNode("vn-foreign"); err != nil {
		t.Errorf("another instance's node was touched: %v", err)
	}
	if _, err := getNode("vn-labelled"); err != nil {
		t.Errorf("a node only labelled as this instance's was deleted: %v", err)
	}
	if _, err := getNode("vn-reused"); err != nil {
		t.Errorf("a registered name now used by another instance was deleted: %v", err)
	}
	if names, err := v.registry().load(); err != nil || strings.Join(names, ",") != "vn-a,vn-b" {
		t.Errorf("registered = %v %v, want vn-a,vn-b", names, err)
	}
	a, _ := getNode("vn-a")
	if a.Labels["type"] != "virtual-kubelet" || a.Labels[virtualnodes.LabelInstance] != "unit" ||
		a.Status.DaemonEndpoints.KubeletEndpoint.Port != 10260 || a.Status.Addresses[0].Address != "192.0.2.1" {
		t.Errorf("vn-a = labels %v port %d addresses %v", a.Labels, a.Status.DaemonEndpoints.KubeletEndpoint.Port, a.Status.Addresses)
	}
	eventually.Seen(t, "the pod Running on vn-b", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})
	streams := v.Streams("vn-b")
	if streams == nil {
		t.Fatal("no streams for vn-b")
	}
	// Each node's kubelet API: built for its name and port, with its own
	// certificate directory under the root dir, and started.
	for name, port := range map[string]int32{"vn-a": 10260, "vn-b": 10261} {
		f := apiOf(name)
		if f == nil {
			t.Fatalf("no kubelet API built for %s", name)
		}
		if f.def.Port != port || f.def.CertDir != filepath.Join(root, "virtual-nodes", "nodes", name, "pki") || f.def.Engine == nil || f.def.Clients == nil {
			t.Errorf("%s's API: port %d certDir %q engine %v", name, f.def.Port, f.def.CertDir, f.def.Engine != nil)
		}
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s's kubelet API not started", name)
		}
	}
	running, err := v.RunningPods(context.Background())
	if err != nil || len(running) != 1 {
		t.Fatalf("running pods = %d, %v", len(running), err)
	}

	// Take vn-b out of the file.
	if err := os.WriteFile(path, []byte(vnFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// The removal deletes the Node, then updates the record and lets the
	// node go: wait for the whole of it (checking right after the Node was
	// gone raced with the rest, and failed once in a make test run).
	eventually.Seen(t, "vn-b deleted and forgotten", func() (bool, string) {
		_, err := getNode("vn-b")
		names, rerr := v.registry().load()
		return apierrors.IsNotFound(err) && rerr == nil && strings.Join(names, ",") == "vn-a" && v.Streams("vn-b") == nil,
			fmt.Sprintf("node: %v; registered %v %v; streams kept %v", err, names, rerr, v.Streams("vn-b") != nil)
	})
	if _, err := getNode("vn-a"); err != nil {
		t.Errorf("vn-a went too: %v", err)
	}
	if names, err := v.registry().load(); err != nil || strings.Join(names, ",") != "vn-a" {
		t.Errorf("registered after removing vn-b = %v %v, want vn-a", names, err)
	}
	if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), "vn-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("vn-b's lease: %v", err)
	}
	if running, err := v.RunningPods(context.Background()); err != nil || len(running) != 0 {
		t.Errorf("after removal the providers still run %d pods (%v): vn-b was not drained", len(running), err)
	}
	if v.Streams("vn-b") != nil {
		t.Error("a removed node still has streams")
	}
	if !apiOf("vn-b").closed.Load() || apiOf("vn-a").closed.Load() {
		t.Errorf("after removing vn-b: its API closed %v, vn-a's closed %v; want only vn-b's port released", apiOf("vn-b").closed.Load(), apiOf("vn-a").closed.Load())
	}
	if err := v.HealthCheck(); err != nil {
		t.Errorf("health: %v", err)
	}
}

// An unknown provider fails the start clearly.
func TestVirtualNodesUnknownProvider(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vn.yaml")
	body := "apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nnodes:\n- {name: x, provider: nimbus, port: 1}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := virtualnodes.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(&kubeletconfig.Settings{Config: kubeletconfig.NewDefaultConfig(), VirtualNodesConfigFile: path, VirtualNodes: cfg}, nil, "v0.0.0-test")
	if err == nil || !strings.Contains(err.Error(), `unknown provider "nimbus"`) {
		t.Errorf("err = %v", err)
	}
}

// fakeAPI stands in for a virtual node's kubelet API.
type fakeAPI struct {
	def       NodeAPI
	started   chan struct{}
	startOnce sync.Once
	closed    atomic.Bool
}

func (f *fakeAPI) Start(ctx context.Context) error {
	f.startOnce.Do(func() { close(f.started) })
	<-ctx.Done()
	return nil
}

func (f *fakeAPI) Close() error { f.closed.Store(true); return nil }
