package nodelease

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

const (
	// DefaultLeaseDurationSeconds is KubeletConfiguration's
	// nodeLeaseDurationSeconds default.
	DefaultLeaseDurationSeconds int32 = 40
	// renewFraction of the lease duration is the default renew interval.
	renewFraction = 0.25
	// jitterFactor spreads renewals of many nodes (interval .. interval*1.04).
	jitterFactor = 0.04

	backoffInitial = 200 * time.Millisecond
	backoffMax     = 7 * time.Second
	// updateAttempts bounds the immediate retries of one renewal.
	updateAttempts = 5
)

// Options configure a Controller. Client and NodeName are required.
type Options struct {
	Client   kubernetes.Interface
	NodeName string
	// LeaseDurationSeconds is nodeLeaseDurationSeconds (default 40).
	LeaseDurationSeconds int32
	// RenewInterval defaults to a quarter of the lease duration.
	RenewInterval time.Duration
	// Node returns the registered Node (nil while there is none), used for
	// the ownerReference; typically nodestatus.Controller.Node. When nil the
	// controller GETs the Node while the Lease has no owner.
	Node func() *v1.Node
	// OnRepeatedFailure is called when a renewal fails more than once in a
	// row (upstream uses it to close idle connections). Optional.
	OnRepeatedFailure func()
	// Clock defaults to the real clock.
	Clock clock.Clock
}

// Controller keeps the node's Lease. Create it with NewController and run
// it with Start.
type Controller struct {
	opts     Options
	duration int32
	interval time.Duration
	clock    clock.Clock
	leases   func() leaseClient

	mu     sync.Mutex
	latest *coordinationv1.Lease
}

type leaseClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// NewController checks opts and returns a Controller.
func NewController(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("nodelease: Options.Client is required")
	}
	if opts.NodeName == "" {
		return nil, errors.New("nodelease: Options.NodeName is required")
	}
	if opts.LeaseDurationSeconds < 0 {
		return nil, fmt.Errorf("nodelease: nodeLeaseDurationSeconds must be positive, got %d", opts.LeaseDurationSeconds)
	}
	if opts.LeaseDurationSeconds == 0 {
		opts.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = time.Duration(float64(time.Duration(opts.LeaseDurationSeconds)*time.Second) * renewFraction)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		opts:     opts,
		duration: opts.LeaseDurationSeconds,
		interval: opts.RenewInterval,
		clock:    opts.Clock,
	}
	c.leases = func() leaseClient { return opts.Client.CoordinationV1().Leases(v1.NamespaceNodeLease) }
	return c, nil
}

// Lease returns the last Lease written, or nil. Callers must not modify it.
func (c *Controller) Lease() *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// errNodeNotRegistered: the Lease waits for its owner, the Node.
var errNodeNotRegistered = errors.New("node not registered yet")

// Start renews the Lease until ctx ends, then returns nil.
func (c *Controller) Start(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("lease", klog.KRef(v1.NamespaceNodeLease, c.opts.NodeName)))
	for {
		c.sync(ctx)
		wait := c.interval + time.Duration(rand.Float64()*jitterFactor*float64(c.interval))
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
		}
	}
}

// sync renews the Lease once, creating it first when needed.
func (c *Controller) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if latest := c.Lease(); latest != nil {
		// Renew from the last written version: no GET in the common case.
		err := c.renew(ctx, latest)
		if err == nil {
			return
		}
		logger.Info("Renewing lease from its last version failed, reading it again", "err", err)
	}
	lease, created := c.ensure(ctx)
	if lease == nil || created {
		return
	}
	if err := c.renew(ctx, lease); err != nil {
		logger.Error(err, "Unable to renew lease, will retry", "after", c.interval)
	}
}

// ensure returns the Lease, creating it when missing. It retries errors
// with exponential backoff capped at backoffMax until ctx ends (nil then).
// A Lease is only created once the Node exists, so that it always carries
// the owner reference that ties it to the Node.
func (c *Controller) ensure(ctx context.Context) (lease *coordinationv1.Lease, created bool) {
	sleep := backoffInitial
	for {
		lease, created, err := c.tryEnsure(ctx)
		switch {
		case err == nil:
			return lease, created
		case errors.Is(err, errNodeNotRegistered):
			// Registration is under way: retry soon, not a renew
			// interval later, so the node's heartbeat starts with it.
			klog.FromContext(ctx).V(2).Info("Node not registered yet, creating the lease later", "after", sleep)
		default:
			klog.FromContext(ctx).Error(err, "Unable to ensure the lease exists, will retry", "after", sleep)
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-c.clock.After(sleep):
		}
		sleep = min(2*sleep, backoffMax)
	}
}

func (c *Controller) tryEnsure(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	lease, err := c.leases().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err == nil {
		return lease, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, err
	}
	desired := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: c.opts.NodeName, Namespace: v1.NamespaceNodeLease},
	}
	if !c.assert(ctx, desired) {
		return nil, false, errNodeNotRegistered
	}
	lease, err = c.leases().Create(ctx, desired, metav1.CreateOptions{})
	if err != nil {
		return nil, false, err
	}
	c.setLatest(lease)
	return lease, true, nil
}

// renew writes base with a new renewTime, retrying a bounded number of
// times; a conflict re-reads the Lease, a deletion recreates it.
func (c *Controller) renew(ctx context.Context, base *coordinationv1.Lease) error {
	for i := 0; i < updateAttempts; i++ {
		l := base.DeepCopy()
		c.assert(ctx, l)
		updated, err := c.leases().Update(ctx, l, metav1.UpdateOptions{})
		if err == nil {
			c.setLatest(updated)
			return nil
		}
		klog.FromContext(ctx).Error(err, "Unable to renew lease")
		switch {
		case apierrors.IsNotFound(err):
			c.setLatest(nil)
			return err // sync recreates it
		case apierrors.IsConflict(err):
			var created bool
			if base, created = c.ensure(ctx); base == nil || created {
				return nil
			}
			continue
		}
		if i > 0 && c.opts.OnRepeatedFailure != nil {
			c.opts.OnRepeatedFailure()
		}
	}
	return fmt.Errorf("lease not renewed after %d attempts", updateAttempts)
}

// assert sets the fields the controller owns on l: holder, duration,
// renewTime = now, and the Node owner reference when the Node is known. It
// reports whether l has that owner reference.
func (c *Controller) assert(ctx context.Context, l *coordinationv1.Lease) bool {
	l.Spec.HolderIdentity = ptr.To(c.opts.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To(c.duration)
	l.Spec.RenewTime = &metav1.MicroTime{Time: c.clock.Now()}

	node := c.node(ctx, l)
	if node == nil || node.UID == "" {
		return hasOwner(l, "")
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	if !hasOwner(l, node.UID) {
		// Replace a reference to an older Node of the same name too.
		var refs []metav1.OwnerReference
		for _, r := range l.OwnerReferences {
			if !(r.Kind == "Node" && r.APIVersion == "v1" && r.Name == node.Name) {
				refs = append(refs, r)
			}
		}
		l.OwnerReferences = append(refs, want)
	}
	return true
}

// node finds the owner Node: from Options.Node, or by GET while the Lease
// has no Node owner yet.
func (c *Controller) node(ctx context.Context, l *coordinationv1.Lease) *v1.Node {
	if c.opts.Node != nil {
		return c.opts.Node()
	}
	if hasOwner(l, "") {
		return nil
	}
	n, err := c.opts.Client.CoreV1().Nodes().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Node not readable yet for the lease owner reference", "err", err)
		return nil
	}
	return n
}

// hasOwner reports whether l has a Node owner reference (with that UID
// when uid is not empty).
func hasOwner(l *coordinationv1.Lease, uid types.UID) bool {
	for _, r := range l.OwnerReferences {
		if r.Kind == "Node" && r.APIVersion == "v1" && (uid == "" || r.UID == uid) {
			return true
		}
	}
	return false
}

func (c *Controller) setLatest(l *coordinationv1.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest = l
}
