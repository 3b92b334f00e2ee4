package nodestatus

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
)

const gib = int64(1 << 30)

type harness struct {
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	c      *Controller

	mu        sync.Mutex
	pressure  Pressure
	readiness Readiness
}

func newHarness(t *testing.T, objs ...*v1.Node) *harness {
	t.Helper()
	h := &harness{
		clock:     clocktesting.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)),
		readiness: Readiness{RuntimeReady: true, NetworkReady: true},
	}
	client := fake.NewClientset()
	for _, o := range objs {
		if err := client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	h.client = client
	hard, err := ParseHardEviction(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		NodeName:               "node-a",
		Hostname:               "node-a",
		NodeLabels:             map[string]string{"node.kubernetes.io/pool": "blue", "example.com/team": "infra"},
		Taints:                 []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}},
		ControllerAttachDetach: true,
		NodeIPs:                []net.IP{net.ParseIP("10.0.0.5")},
		MaxPods:                110,
		KubeletPort:            10250,
		KubeletVersion:         "v1.37.2",
		KubeReserved:           v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("256Mi")},
		SystemReserved:         v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		HardEviction:           hard,
	}
	c, err := NewController(Options{
		Client: client,
		Config: cfg,
		Facts: FactsFunc(func(context.Context) (Facts, error) {
			f := HostFacts(&cfg, machineinfo.Info{
				NumCPU: 2, MemoryCapacityBytes: 4 * gib, RootFSCapacityBytes: 50 * gib,
				MachineID: "mid", SystemUUID: "uuid", BootID: "boot", KernelVersion: "6.1.0",
				OSImage: "Debian GNU/Linux 12 (bookworm)", OperatingSystem: "linux", Architecture: "amd64",
				Hostname: "node-a",
			})
			f.NodeInfo.ContainerRuntimeVersion = "containerd://1.6.20"
			h.mu.Lock()
			defer h.mu.Unlock()
			f.Readiness, f.Pressure = h.readiness, h.pressure
			return f, nil
		}),
		UpdateFrequency: 10 * time.Second,
		ReportFrequency: 5 * time.Minute,
		Clock:           h.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) node(t *testing.T) *v1.Node {
	t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *harness) count(verb, subresource string) int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == "nodes" && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

func condition(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestRegistrationCreatesNode(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.c.register(ctx); err != nil {
		t.Fatal(err)
	}
	n := h.node(t)
	for k, want := range map[string]string{
		"kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		"node.kubernetes.io/pool": "blue", "example.com/team": "infra",
	} {
		if n.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], want)
		}
	}
	if n.Annotations[ControllerManagedAttachAnnotation] != "true" {
		t.Error("attach-detach annotation missing")
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" {
		t.Errorf("taints = %+v", n.Spec.Taints)
	}
	capWant := map[v1.ResourceName]string{"cpu": "2", "memory": "4Gi", "ephemeral-storage": "50Gi", "pods": "110"}
	for r, want := range capWant {
		if q := n.Status.Capacity[r]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("capacity %s = %s, want %s", r, q.String(), want)
		}
	}
	// memory 4Gi-256Mi-100Mi; storage 50Gi-10%; cpu 2-200m.
	allocWant := map[v1.ResourceName]string{"cpu": "1800m", "memory": "3740Mi", "ephemeral-storage": "46080Mi", "pods": "110"}
	for r, want := range allocWant {
		if q := n.Status.Allocatable[r]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", r, q.String(), want)
		}
	}
	wantConds := []struct {
		t      v1.NodeConditionType
		status v1.ConditionStatus
		reason string
	}{
		{v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory"},
		{v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID"},
		{v1.NodeReady, v1.ConditionTrue, "KubeletReady"},
	}
	if len(n.Status.Conditions) != len(wantConds) {
		t.Fatalf("conditions = %+v", n.Status.Conditions)
	}
	for i, w := range wantConds {
		c := n.Status.Conditions[i]
		if c.Type != w.t || c.Status != w.status || c.Reason != w.reason || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %d = %+v, want %s %s %s", i, c, w.t, w.status, w.reason)
		}
	}
	if got := condition(n, v1.NodeReady).Message; got != "kubelet is posting ready status" {
		t.Errorf("ready message = %q", got)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Error("kubelet port")
	}
	ni := n.Status.NodeInfo
	if ni.MachineID != "mid" || ni.SystemUUID != "uuid" || ni.BootID != "boot" || ni.KernelVersion != "6.1.0" ||
		ni.OSImage != "Debian GNU/Linux 12 (bookworm)" || ni.ContainerRuntimeVersion != "containerd://1.6.20" ||
		ni.KubeletVersion != "v1.37.2" || ni.OperatingSystem != "linux" || ni.Architecture != "amd64" {
		t.Errorf("nodeInfo = %+v", ni)
	}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0].Address != "10.0.0.5" || n.Status.Addresses[1].Address != "node-a" {
		t.Errorf("addresses = %+v", n.Status.Addresses)
	}
	if h.c.Node() == nil || !IsReady(h.c.Node()) {
		t.Error("Node() must return the registered, ready node")
	}
}

func TestRegistrationReconcilesExistingNode(t *testing.T) {
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "old-uid", Labels: map[string]string{
		"kubernetes.io/hostname": "stale", "kubernetes.io/os": "linux", "team": "kept"}}}
	h := newHarness(t, existing)
	ctx := context.Background()
	if err := h.c.register(ctx); err != nil {
		t.Fatal(err)
	}
	n := h.node(t)
	if n.Labels["kubernetes.io/hostname"] != "node-a" || n.Labels["team"] != "kept" || n.Labels["kubernetes.io/arch"] != "amd64" {
		t.Errorf("labels = %v", n.Labels)
	}
	if h.count("patch", "status") != 1 {
		t.Errorf("want one reconcile patch, actions: %v", h.client.Actions())
	}
	// The stale status of a reused node is written at the first check.
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.node(t); !IsReady(n) || n.Status.Capacity.Cpu().Value() != 2 {
		t.Errorf("status not written: %+v", n.Status)
	}
}

func TestStatusPatchedOnlyWhenChangedOrReportDue(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.c.register(ctx); err != nil {
		t.Fatal(err)
	}
	created := condition(h.node(t), v1.NodeReady).LastTransitionTime

	h.clock.Step(10 * time.Second)
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.count("patch", "status"); got != 0 {
		t.Fatalf("unchanged status must not be written, got %d patches", got)
	}

	h.mu.Lock()
	h.pressure.Memory = true
	h.mu.Unlock()
	h.clock.Step(10 * time.Second)
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.count("patch", "status"); got != 1 {
		t.Fatalf("changed status must be written once, got %d", got)
	}
	n := h.node(t)
	mem := condition(n, v1.NodeMemoryPressure)
	if mem.Status != v1.ConditionTrue || mem.Reason != "KubeletHasInsufficientMemory" || !mem.LastTransitionTime.Time.Equal(h.clock.Now()) {
		t.Errorf("memory pressure = %+v", mem)
	}
	ready := condition(n, v1.NodeReady)
	if !ready.LastTransitionTime.Equal(&created) || !ready.LastHeartbeatTime.Time.Equal(h.clock.Now()) {
		t.Errorf("ready must keep its transition time and get a new heartbeat: %+v (created %v)", ready, created)
	}

	h.clock.Step(4 * time.Minute)
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.count("patch", "status"); got != 1 {
		t.Fatalf("report not due yet, got %d patches", got)
	}
	h.clock.Step(time.Minute)
	if err := h.c.syncStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.count("patch", "status"); got != 2 {
		t.Fatalf("report frequency passed: want a heartbeat write, got %d patches", got)
	}
	if hb := condition(h.node(t), v1.NodeReady).LastHeartbeatTime; !hb.Time.Equal(h.clock.Now()) {
		t.Errorf("heartbeat = %v, want %v", hb, h.clock.Now())
	}
}

func TestNotReadyMessageFromRuntime(t *testing.T) {
	h := newHarness(t)
	h.readiness = Readiness{RuntimeReady: true, Errors: []string{"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"}}
	if err := h.c.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := condition(h.node(t), v1.NodeReady)
	if r.Status != v1.ConditionFalse || r.Reason != "KubeletNotReady" || r.Message != h.readiness.Errors[0] {
		t.Errorf("ready = %+v", r)
	}
}

func TestStartRecreatesDeletedNodeAndHonoursTrigger(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.c.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v", err)
		}
	}()

	select {
	case <-h.c.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("controller never became ready")
	}
	// A readiness change is written at once when triggered, without a tick.
	h.mu.Lock()
	h.readiness = Readiness{NetworkReady: true, Errors: []string{"container runtime is down"}}
	h.mu.Unlock()
	h.c.Trigger()
	eventually.True(t, "not-ready status after trigger", func() bool {
		n, err := h.client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil && condition(n, v1.NodeReady).Status == v1.ConditionFalse
	})

	if err := h.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Either the watch sees the deletion or the next check's patch finds
	// the node gone; tick the clock until it is back.
	eventually.True(t, "node recreated", func() bool {
		if h.clock.HasWaiters() {
			h.clock.Step(10 * time.Second)
		}
		return h.count("create", "") >= 2
	})
	n := h.node(t)
	if n.Labels["kubernetes.io/hostname"] != "node-a" || len(n.Status.Conditions) != 4 {
		t.Errorf("recreated node incomplete: %+v", n)
	}
}

func TestRegisterRetriesOnError(t *testing.T) {
	h := newHarness(t)
	fails := 2
	h.client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtimeObject, error) {
		if fails > 0 {
			fails--
			return true, nil, errTransient
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.c.Start(ctx) }()
	eventually.True(t, "registration after retries", func() bool {
		if h.clock.HasWaiters() {
			h.clock.Step(time.Second)
		}
		select {
		case <-h.c.Ready():
			return true
		default:
			return false
		}
	})
	cancel()
	<-done
	if h.count("create", "") != 3 {
		t.Errorf("want 3 create attempts, got %d", h.count("create", ""))
	}
}
