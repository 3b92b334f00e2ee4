package nodelease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func newController(t *testing.T, client *fake.Clientset, clk *clocktesting.FakeClock, node func() *v1.Node) *Controller {
	t.Helper()
	c, err := NewController(Options{Client: client, NodeName: "node-a", Clock: clk, Node: node})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getLease(t *testing.T, client *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func registeredNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-1"}}
}

func TestDefaults(t *testing.T) {
	c, err := NewController(Options{Client: fake.NewClientset(), NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if c.duration != 40 || c.interval != 10*time.Second {
		t.Fatalf("duration %d interval %v, want 40 and 10s", c.duration, c.interval)
	}
	c, _ = NewController(Options{Client: fake.NewClientset(), NodeName: "n", LeaseDurationSeconds: 60})
	if c.interval != 15*time.Second {
		t.Fatalf("interval = %v, want a quarter of 60s", c.interval)
	}
	if _, err := NewController(Options{Client: fake.NewClientset(), NodeName: "n", LeaseDurationSeconds: -1}); err == nil {
		t.Fatal("negative duration must be refused")
	}
}

func TestLeaseCreatedWithOwnerAndRenewed(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	c := newController(t, client, clk, registeredNode)
	ctx := context.Background()

	c.sync(ctx)
	l := getLease(t, client)
	if *l.Spec.HolderIdentity != "node-a" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(start) {
		t.Fatalf("lease spec = %+v", l.Spec)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != "uid-1" ||
		l.OwnerReferences[0].APIVersion != "v1" || l.OwnerReferences[0].Name != "node-a" {
		t.Fatalf("owner refs = %+v", l.OwnerReferences)
	}

	clk.Step(10 * time.Second)
	client.ClearActions()
	c.sync(ctx)
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "leases" {
			t.Errorf("renewal from the last written lease must not GET: %v", client.Actions())
		}
	}
	if l := getLease(t, client); !l.Spec.RenewTime.Time.Equal(start.Add(10 * time.Second)) {
		t.Fatalf("renewTime = %v", l.Spec.RenewTime)
	}
}

func TestLeaseWaitsForNodeThenSetsOwner(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	var node atomic.Pointer[v1.Node]
	c := newController(t, client, clk, node.Load)
	ctx := context.Background()

	synced := make(chan struct{})
	go func() { c.sync(ctx); close(synced) }()
	// The first attempt finds no Node and waits a short back-off (not a
	// renew interval) before trying again.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if _, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node-a", metav1.GetOptions{}); err == nil {
		t.Fatal("lease must not be created before the node exists")
	}
	node.Store(registeredNode())
	clk.Step(backoffInitial)
	<-synced
	if l := getLease(t, client); len(l.OwnerReferences) != 1 {
		t.Fatalf("owner refs = %+v", l.OwnerReferences)
	}
}

func TestExistingLeaseWithoutOwnerAdopted(t *testing.T) {
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
	}, registeredNode())
	clk := clocktesting.NewFakeClock(start)
	c := newController(t, client, clk, nil) // owner found by GET
	c.sync(context.Background())
	l := getLease(t, client)
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-1" || l.Spec.RenewTime == nil {
		t.Fatalf("lease = %+v", l)
	}
}

func TestOwnerReplacedWhenNodeRecreated(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	var node atomic.Pointer[v1.Node]
	node.Store(registeredNode())
	c := newController(t, client, clk, node.Load)
	c.sync(context.Background())
	node.Store(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-2"}})
	c.sync(context.Background())
	l := getLease(t, client)
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != "uid-2" {
		t.Fatalf("owner refs = %+v", l.OwnerReferences)
	}
}

func TestLeaseRecreatedAfterDeletion(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	c := newController(t, client, clk, registeredNode)
	ctx := context.Background()
	c.sync(ctx)
	if err := client.CoordinationV1().Leases("kube-node-lease").Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	c.sync(ctx)
	l := getLease(t, client)
	if !l.Spec.RenewTime.Time.Equal(start.Add(10*time.Second)) || len(l.OwnerReferences) != 1 {
		t.Fatalf("recreated lease = %+v", l)
	}
}

func TestStartRetriesWithBackoffAndRenews(t *testing.T) {
	client := fake.NewClientset()
	var fails atomic.Int32
	fails.Store(3)
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Load() > 0 {
			fails.Add(-1)
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(start)
	c := newController(t, client, clk, registeredNode)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()

	var steps []time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for c.Lease() == nil {
		if time.Now().After(deadline) {
			t.Fatal("lease never created")
		}
		if clk.HasWaiters() {
			// Step only as far as the backoff asks: 200ms, 400ms, 800ms.
			step := backoffInitial << len(steps)
			steps = append(steps, step)
			clk.Step(step)
		}
		time.Sleep(time.Millisecond)
	}
	if len(steps) != 3 {
		t.Errorf("want 3 backoff waits, got %v", steps)
	}
	created := c.Lease().Spec.RenewTime.Time

	// Next renewal after the interval (plus at most 4% jitter).
	for !c.Lease().Spec.RenewTime.Time.After(created) {
		if time.Now().After(deadline) {
			t.Fatal("lease never renewed")
		}
		if clk.HasWaiters() {
			clk.Step(11 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestConflictRereadsLease(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	c := newController(t, client, clk, registeredNode)
	ctx := context.Background()
	c.sync(ctx)
	// Someone else wrote the lease: our cached version is stale.
	stale := c.Lease().DeepCopy()
	stale.ResourceVersion = "stale"
	c.setLatest(stale)
	conflicts := 1
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, newConflict()
		}
		return false, nil, nil
	})
	clk.Step(10 * time.Second)
	c.sync(ctx)
	if l := getLease(t, client); !l.Spec.RenewTime.Time.Equal(start.Add(10 * time.Second)) {
		t.Fatalf("lease not renewed after conflict: %+v", l.Spec)
	}
}
