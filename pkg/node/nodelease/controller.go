package nodelease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	leasecontroller "k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// DefaultLeaseDurationSeconds is KubeletConfiguration's
	// nodeLeaseDurationSeconds default.
	DefaultLeaseDurationSeconds int32 = 40
	// renewFraction of the lease duration is the default renew interval.
	renewFraction = 0.25

	// The wait for the owner Node before the first Lease is created.
	nodeWaitInitial = 200 * time.Millisecond
	nodeWaitMax     = 7 * time.Second
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
	// the ownerReference; typically nodestatus.Controller.Node. While it
	// returns nil (or when it is not set) the controller GETs the Node as
	// long as the Lease has no Node owner.
	Node func() *v1.Node
	// OnRepeatedFailure is called when a renewal fails more than once in a
	// row (upstream uses it to close idle connections). Optional.
	OnRepeatedFailure func()
	// Clock stamps renewTime; defaults to the real clock. (The renew
	// interval itself is timed by the library on the real clock.)
	Clock clock.Clock
}

// Controller keeps the node's Lease. Create it with NewController and run
// it with Start. The create / renew / re-read / recreate loop is
// component-helpers' lease controller, the one upstream's kubelet and
// kube-apiserver use; this package adds the kubelet's parts: the defaults,
// the owner reference to the Node, and waiting for that Node before the
// first create.
type Controller struct {
	opts     Options
	duration int32
	interval time.Duration
	inner    leasecontroller.Controller
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
	c := &Controller{opts: opts, duration: opts.LeaseDurationSeconds, interval: opts.RenewInterval}
	c.inner = leasecontroller.NewController(opts.Clock, opts.Client, opts.NodeName, opts.LeaseDurationSeconds,
		opts.OnRepeatedFailure, opts.RenewInterval, opts.NodeName, v1.NamespaceNodeLease, c.setNodeOwner)
	return c, nil
}

// errNodeNotRegistered: the Lease waits for its owner, the Node.
var errNodeNotRegistered = errors.New("node not registered yet")

// Start renews the Lease until ctx ends, then returns nil.
func (c *Controller) Start(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("lease", klog.KRef(v1.NamespaceNodeLease, c.opts.NodeName)))
	if !c.waitForNode(ctx) {
		return nil
	}
	c.inner.Run(ctx)
	return nil
}

// waitForNode returns once the owner Node is known (false if ctx ended
// first). The library would only retry a create the owner blocked a renew
// interval later; polling here with a short back-off starts the heartbeat
// together with the node's registration.
func (c *Controller) waitForNode(ctx context.Context) bool {
	// Step keeps returning the cap once reached (ExponentialBackoff would
	// give up there instead).
	backoff := wait.Backoff{Duration: nodeWaitInitial, Factor: 2, Cap: nodeWaitMax, Steps: math.MaxInt32}
	for c.ownerNode(ctx, &coordinationv1.Lease{}) == nil {
		klog.FromContext(ctx).V(2).Info("Node not registered yet, creating the lease later")
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff.Step()):
		}
	}
	return true
}

// setNodeOwner is the library's post-process hook, run on every Lease it
// is about to create or update. It points an ownerReference at the Node
// (replacing one to an older Node of the same name), so deleting the Node
// garbage-collects its Lease. It refuses to create a Lease without that
// owner, but lets an existing one be renewed while the Node is unknown.
func (c *Controller) setNodeOwner(l *coordinationv1.Lease) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.interval)
	defer cancel()
	node := c.ownerNode(ctx, l)
	if node == nil {
		if l.ResourceVersion == "" { // about to be created
			return errNodeNotRegistered
		}
		return nil
	}
	if hasOwner(l, node.UID) {
		return nil
	}
	var refs []metav1.OwnerReference
	for _, r := range l.OwnerReferences {
		if !(r.Kind == "Node" && r.APIVersion == "v1" && r.Name == node.Name) {
			refs = append(refs, r)
		}
	}
	l.OwnerReferences = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID})
	return nil
}

// ownerNode finds the owner Node: from Options.Node, or by GET while the
// Lease has no Node owner yet. nil when unknown.
func (c *Controller) ownerNode(ctx context.Context, l *coordinationv1.Lease) *v1.Node {
	if c.opts.Node != nil {
		if n := c.opts.Node(); n != nil && n.UID != "" {
			return n
		}
	}
	if hasOwner(l, "") {
		return nil
	}
	n, err := c.opts.Client.CoreV1().Nodes().Get(ctx, c.opts.NodeName, metav1.GetOptions{})
	if err != nil || n.UID == "" {
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
