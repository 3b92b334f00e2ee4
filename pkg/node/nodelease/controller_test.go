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

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

var start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testInterval keeps the library's real-time renew loop quick in tests.
const testInterval = 20 * time.Millisecond

// run starts a controller renewing every testInterval, stamping renewTime
// from clk; it stops when the test ends.
func run(t *testing.T, client *fake.Clientset, clk *clocktesting.FakeClock, node func() *v1.Node) {
	t.Helper()
	runWith(t, Options{Client: client, NodeName: "node-a", Clock: clk, Node: node, RenewInterval: testInterval})
}

func runWith(t *testing.T, opts Options) {
	t.Helper()
	c, err := NewController(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// lease returns the stored Lease, or nil.
func lease(client *fake.Clientset) *coordinationv1.Lease {
	l, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), "node-a", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

func ownedBy(l *coordinationv1.Lease, uid string) bool {
	return l != nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].Kind == "Node" &&
		l.OwnerReferences[0].APIVersion == "v1" && l.OwnerReferences[0].Name == "node-a" && string(l.OwnerReferences[0].UID) == uid
}

func countActions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
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
	run(t, client, clk, registeredNode)

	eventually.True(t, "the lease", func() bool { return lease(client) != nil })
	l := lease(client)
	if *l.Spec.HolderIdentity != "node-a" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(start) {
		t.Fatalf("lease spec = %+v", l.Spec)
	}
	if !ownedBy(l, "uid-1") {
		t.Fatalf("owner refs = %+v", l.OwnerReferences)
	}

	clk.Step(10 * time.Second)
	eventually.True(t, "a renewal", func() bool { return lease(client).Spec.RenewTime.Time.Equal(start.Add(10 * time.Second)) })
	if l := lease(client); !ownedBy(l, "uid-1") || *l.Spec.HolderIdentity != "node-a" {
		t.Fatalf("renewed lease = %+v", l)
	}
}

func TestRenewalDoesNotReadTheLease(t *testing.T) {
	client := fake.NewClientset()
	var gets atomic.Int32
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return false, nil, nil
	})
	var updates atomic.Int32
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates.Add(1)
		return false, nil, nil
	})
	run(t, client, clocktesting.NewFakeClock(start), registeredNode)
	eventually.True(t, "three renewals", func() bool { return updates.Load() >= 3 })
	// The one GET is ensure-before-create; renewals reuse the written Lease.
	if g := gets.Load(); g != 1 {
		t.Fatalf("lease GETs = %d after %d renewals, want 1", g, updates.Load())
	}
}

func TestLeaseWaitsForNodeThenSetsOwner(t *testing.T) {
	client := fake.NewClientset()
	var node atomic.Pointer[v1.Node]
	run(t, client, clocktesting.NewFakeClock(start), node.Load)

	// Not registered: the controller polls for the Node and creates nothing.
	eventually.True(t, "two polls for the node", func() bool { return countActions(client, "get", "nodes") >= 2 })
	if countActions(client, "create", "leases") != 0 {
		t.Fatal("lease must not be created before the node exists")
	}
	node.Store(registeredNode())
	eventually.True(t, "the owned lease", func() bool { return ownedBy(lease(client), "uid-1") })
}

func TestExistingLeaseWithoutOwnerAdopted(t *testing.T) {
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease"},
	}, registeredNode())
	run(t, client, clocktesting.NewFakeClock(start), nil) // owner found by GET
	eventually.True(t, "the adopted lease", func() bool {
		l := lease(client)
		return ownedBy(l, "uid-1") && l.Spec.RenewTime != nil
	})
}

func TestRegisteredNodeFoundByGetWhenOptionSaysNil(t *testing.T) {
	// registerNode=false: someone else registered the Node; Options.Node
	// never learns it, the GET does.
	client := fake.NewClientset(registeredNode())
	run(t, client, clocktesting.NewFakeClock(start), func() *v1.Node { return nil })
	eventually.True(t, "the owned lease", func() bool { return ownedBy(lease(client), "uid-1") })
}

func TestOwnerReplacedWhenNodeRecreated(t *testing.T) {
	client := fake.NewClientset()
	var node atomic.Pointer[v1.Node]
	node.Store(registeredNode())
	run(t, client, clocktesting.NewFakeClock(start), node.Load)
	eventually.True(t, "the owned lease", func() bool { return ownedBy(lease(client), "uid-1") })
	node.Store(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-2"}})
	eventually.True(t, "the new owner alone", func() bool { return ownedBy(lease(client), "uid-2") })
}

func TestLeaseRecreatedAfterDeletion(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	run(t, client, clk, registeredNode)
	eventually.True(t, "the lease", func() bool { return lease(client) != nil })
	ctx := context.Background()
	clk.Step(10 * time.Second)
	if err := client.CoordinationV1().Leases("kube-node-lease").Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the recreated lease", func() bool {
		l := lease(client)
		return l != nil && l.Spec.RenewTime.Time.Equal(start.Add(10*time.Second)) && ownedBy(l, "uid-1")
	})
	if n := countActions(client, "create", "leases"); n != 2 {
		t.Fatalf("creates = %d, want 2", n)
	}
}

func TestStartRetriesWithBackoffAndRenews(t *testing.T) {
	client := fake.NewClientset()
	var fails atomic.Int32
	fails.Store(2)
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails.Load() > 0 {
			fails.Add(-1)
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(start)
	run(t, client, clk, registeredNode)
	eventually.True(t, "the lease despite errors", func() bool { return lease(client) != nil })
	if fails.Load() != 0 {
		t.Fatalf("lease created with %d failures left", fails.Load())
	}
	clk.Step(10 * time.Second)
	eventually.True(t, "a renewal", func() bool { return lease(client).Spec.RenewTime.Time.Equal(start.Add(10 * time.Second)) })
}

func TestConflictRereadsLease(t *testing.T) {
	client := fake.NewClientset()
	clk := clocktesting.NewFakeClock(start)
	run(t, client, clk, registeredNode)
	eventually.True(t, "the lease", func() bool { return lease(client) != nil })

	// Someone else writes the lease: the next renewal conflicts once.
	var conflicts atomic.Int32
	conflicts.Store(1)
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.Load() > 0 {
			conflicts.Add(-1)
			return true, nil, newConflict()
		}
		return false, nil, nil
	})
	clk.Step(10 * time.Second)
	eventually.True(t, "a renewal after the conflict", func() bool {
		return conflicts.Load() == 0 && lease(client).Spec.RenewTime.Time.Equal(start.Add(10*time.Second))
	})
}

func TestRepeatedFailureCallback(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection reset")
	})
	var called atomic.Int32
	runWith(t, Options{Client: client, NodeName: "node-a", Node: registeredNode,
		RenewInterval: testInterval, OnRepeatedFailure: func() { called.Add(1) }})
	eventually.True(t, "the repeated-failure callback", func() bool { return called.Load() > 0 })
}
