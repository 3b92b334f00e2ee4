package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// lifecycle is a fake engine: every pod has terminated unless running
// says otherwise; the pods in gone it never had.
type lifecycle struct {
	running atomic.Bool
	gone    sync.Map
}

func (l *lifecycle) PodTerminated(uid types.UID) bool {
	_, gone := l.gone.Load(uid)
	return gone || !l.running.Load()
}
func (l *lifecycle) CanBeDeleted(*v1.Pod) bool    { return !l.running.Load() }
func (l *lifecycle) RunsStaticPod(types.UID) bool { return l.running.Load() }

func facts(context.Context) (nodestatus.Facts, error) {
	return nodestatus.Facts{
		Capacity: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("4"),
			v1.ResourceMemory: resource.MustParse("8Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		},
		Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}},
		NodeInfo:  v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
		Labels:    map[string]string{v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64"},
		Readiness: nodestatus.Readiness{RuntimeReady: true, NetworkReady: true},
	}, nil
}

// fakeAPI is a fake clientset that, like the API server, gives every
// created object a UID (owner references need one).
func fakeAPI(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	n := 0
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			n++
			o.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
		}
		return false, nil, nil
	})
	return c
}

// startCore runs a joined core (fake API server, no runtime at all).
func startCore(t *testing.T, client *fake.Clientset, l Lifecycle) *Core {
	t.Helper()
	return startCoreWith(t, &Clients{Kube: client, Events: client}, l)
}

// startCoreWith is startCore with the clients given.
func startCoreWith(t *testing.T, clients *Clients, l Lifecycle) *Core {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	core, err := New(ctx, Options{
		Config:       nodestatus.Config{NodeName: "virt-1", KubeletVersion: "v1.37.2", KubeletPort: 10250},
		Facts:        nodestatus.FactsFunc(facts),
		Clients:      clients,
		RegisterNode: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.SetLifecycle(l)
	var g runnable.Group
	core.AddTo(g.Stage("core"))
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("group: %v", err)
		}
		core.Shutdown()
	})
	return core
}

// The node core needs no container runtime: with only a facts provider and
// an engine's lifecycle answers, it registers the Node, keeps its Lease and
// writes pod statuses.
func TestCoreWithoutRuntimeRegistersLeasesAndWritesStatus(t *testing.T) {
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceAPI}},
		Spec: v1.PodSpec{NodeName: "virt-1", Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	client := fakeAPI(pod.DeepCopy())
	l := &lifecycle{}
	l.running.Store(true)
	core := startCore(t, client, l)

	var node *v1.Node
	eventually.True(t, "the Node registered and Ready", func() bool {
		n, err := client.CoreV1().Nodes().Get(ctx, "virt-1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		node = n
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	})
	if node.Status.Capacity.Cpu().String() != "4" || node.Status.Addresses[0].Address != "10.1.2.3" || node.Status.NodeInfo.KubeletVersion != "v1.37.2" {
		t.Errorf("node status not from the facts: %+v", node.Status)
	}
	eventually.True(t, "the Lease", func() bool {
		var lease *coordinationv1.Lease
		lease, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "virt-1", metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime != nil
	})

	core.Pods().AddOrUpdate(pod)
	core.Status().SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.9.9.9",
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}})
	eventually.True(t, "the pod status written", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP == "10.9.9.9"
	})
	if n := core.Node(); n == nil || n.Name != "virt-1" {
		t.Errorf("admission node = %v", n)
	}
}

// A static pod the engine runs gets a mirror pod once the Node exists; it
// goes when the engine stops running the pod.
func TestMirrorPodsFollowStaticPods(t *testing.T) {
	ctx := context.Background()
	client := fakeAPI()
	l := &lifecycle{}
	l.running.Store(true)
	core := startCore(t, client, l)
	static := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-virt-1", Namespace: "kube-system", UID: "static-uid",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile, podspec.ConfigHashAnnotation: "static-uid"}},
		Spec: v1.PodSpec{NodeName: "virt-1", Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	core.Pods().AddOrUpdate(static)
	core.TriggerMirrors()
	var mirror *v1.Pod
	eventually.True(t, "the mirror pod", func() bool {
		m, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd-virt-1", metav1.GetOptions{})
		mirror = m
		return err == nil
	})
	if !podspec.IsMirror(mirror) || len(mirror.OwnerReferences) != 1 || mirror.OwnerReferences[0].Kind != "Node" {
		t.Errorf("not a mirror pod owned by the Node: %+v", mirror.ObjectMeta)
	}
	// The API source would record the mirror; do it by hand.
	core.Pods().AddOrUpdate(mirror)
	l.running.Store(false)
	core.TriggerMirrors()
	eventually.True(t, "the mirror pod deleted", func() bool {
		_, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd-virt-1", metav1.GetOptions{})
		return err != nil
	})
}

// A mirror pod whose static pod this kubelet does not run is deleted at
// once even when someone already started a graceful deletion (the garbage
// collector after the Node was recreated, a user): nothing else would ever
// finish it, and it would stay Terminating, not Ready, in kube-system.
func TestTerminatingOrphanedMirrorPodIsDeleted(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	orphan := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-virt-1", Namespace: "kube-system", UID: "mirror-uid",
			DeletionTimestamp: &now, DeletionGracePeriodSeconds: ptr.To[int64](30),
			Annotations: map[string]string{podspec.ConfigMirrorAnnotation: "gone-hash", podspec.ConfigSourceAnnotation: podspec.SourceFile}},
		Spec: v1.PodSpec{NodeName: "virt-1", Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	client := fakeAPI(orphan)
	l := &lifecycle{}
	l.running.Store(true)
	l.gone.Store(types.UID("gone-hash"), true)
	core := startCore(t, client, l)
	core.Pods().AddOrUpdate(orphan)
	core.TriggerMirrors()
	eventually.True(t, "the terminating orphaned mirror pod deleted", func() bool {
		_, err := client.CoreV1().Pods("kube-system").Get(ctx, "web-virt-1", metav1.GetOptions{})
		return err != nil
	})
}

// Standalone, the core writes nothing and has no pod sources; admission's
// Node comes from the local facts.
func TestStandaloneCore(t *testing.T) {
	core, err := New(context.Background(), Options{Config: nodestatus.Config{NodeName: "solo", MaxPods: 110}, Facts: nodestatus.FactsFunc(facts)})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Shutdown()
	if srcs := core.PodSources(nil); len(srcs) != 0 {
		t.Errorf("standalone pod sources = %v", srcs)
	}
	n := core.Node()
	if n == nil || n.Name != "solo" || n.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("local node = %+v", n)
	}
	core.TriggerMirrors() // a no-op, must not block
}

// The Node's status and Lease go through the heartbeat client, so pod
// status writes queued behind the main client's rate limit never delay
// them; pod statuses go through the main client.
func TestHeartbeatsUseTheirOwnClient(t *testing.T) {
	ctx := context.Background()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceAPI}},
		Spec: v1.PodSpec{NodeName: "virt-1", Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	client := fakeAPI(pod.DeepCopy())
	// Another client of the same (fake) API server.
	hb := &fake.Clientset{}
	n := 0
	hb.AddReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			n++
			o.SetUID(types.UID(fmt.Sprintf("hb-uid-%d", n)))
		}
		return false, nil, nil
	})
	hb.AddReactor("*", "*", k8stesting.ObjectReaction(client.Tracker()))
	hb.AddWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		return true, w, err
	})
	l := &lifecycle{}
	l.running.Store(true)
	core := startCoreWith(t, &Clients{Kube: client, Events: client, Heartbeat: hb}, l)

	eventually.True(t, "the Node and its Lease", func() bool {
		_, errN := client.CoreV1().Nodes().Get(ctx, "virt-1", metav1.GetOptions{})
		l, errL := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "virt-1", metav1.GetOptions{})
		return errN == nil && errL == nil && l.Spec.RenewTime != nil
	})
	core.Pods().AddOrUpdate(pod)
	core.Status().SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning})
	eventually.True(t, "the pod status written", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	writes := func(c *fake.Clientset) map[string]int {
		out := map[string]int{}
		for _, a := range c.Actions() {
			switch a.GetVerb() {
			case "create", "update", "patch":
				out[a.GetResource().Resource]++
			}
		}
		return out
	}
	main, heart := writes(client), writes(hb)
	if main["nodes"] != 0 || main["leases"] != 0 {
		t.Errorf("the main client wrote nodes or leases: %v", main)
	}
	if heart["nodes"] == 0 || heart["leases"] == 0 || heart["pods"] != 0 {
		t.Errorf("heartbeat client writes %v: want nodes and leases, no pods", heart)
	}
	if main["pods"] == 0 {
		t.Errorf("pod status not written by the main client: %v", main)
	}
}

// NewClients gives the heartbeat client no client-side rate limit and the
// main client the configured one.
func TestNewClientsHeartbeatUnlimited(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClients(ClientConfig{Kubeconfig: kc, QPS: 7, Burst: 9, EventQPS: 3, EventBurst: 4})
	if err != nil {
		t.Fatal(err)
	}
	limiter := func(i kubernetes.Interface) flowcontrol.RateLimiter {
		return i.CoreV1().RESTClient().GetRateLimiter()
	}
	if l := limiter(c.Kube); l == nil || l.QPS() != 7 {
		t.Errorf("main client limiter = %v, want QPS 7", l)
	}
	if l := limiter(c.Events); l == nil || l.QPS() != 3 {
		t.Errorf("events client limiter = %v, want QPS 3", l)
	}
	if l := limiter(c.Heartbeat); l != nil {
		t.Errorf("heartbeat client has a rate limit (QPS %v)", l.QPS())
	}
}
