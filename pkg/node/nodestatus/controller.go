package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of KubeletConfiguration's nodeStatusUpdateFrequency and
// nodeStatusReportFrequency.
const (
	DefaultUpdateFrequency = 10 * time.Second
	DefaultReportFrequency = 5 * time.Minute
)

const (
	registerBackoffInitial = 100 * time.Millisecond
	registerBackoffMax     = 7 * time.Second
	// patchAttempts bounds the status patch retries within one check; the
	// next check starts over.
	patchAttempts = 5
)

// Options configure a Controller. Client, Config.NodeName and Facts are
// required.
type Options struct {
	Client kubernetes.Interface
	Config Config
	// Facts gives what the node reports about itself; asked at
	// registration and at every status check. When it fails after a first
	// success, the last good facts are used.
	Facts FactsProvider
	// UpdateFrequency is how often the status is computed and, if changed,
	// written (nodeStatusUpdateFrequency). Default 10s.
	UpdateFrequency time.Duration
	// ReportFrequency is the longest time between two writes even without
	// change (nodeStatusReportFrequency). Default 5m.
	ReportFrequency time.Duration
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Startup, when set, times this node's start (kubelet_node_startup_*);
	// only the real node has one.
	Startup *Startup
}

// Controller registers this kubelet's Node and keeps its status current.
// Create it with NewController and run it with Start.
type Controller struct {
	opts    Options
	client  kubernetes.Interface
	cfg     Config
	clock   clock.WithTicker
	trigger chan struct{}
	ready   chan struct{}

	mu         sync.RWMutex
	latest     *v1.Node // last Node seen from the API server (nil before registration / after deletion)
	registered bool
	lastReport time.Time
	facts      Facts
	haveFacts  bool
	readyOnce  sync.Once
}

// NewController checks opts and returns a Controller.
func NewController(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("nodestatus: Options.Client is required")
	}
	if opts.Config.NodeName == "" {
		return nil, errors.New("nodestatus: Options.Config.NodeName is required")
	}
	if opts.Facts == nil {
		return nil, errors.New("nodestatus: Options.Facts is required")
	}
	if err := ValidateNodeLabels(opts.Config.NodeLabels); err != nil {
		return nil, err
	}
	if opts.UpdateFrequency <= 0 {
		opts.UpdateFrequency = DefaultUpdateFrequency
	}
	if opts.ReportFrequency <= 0 {
		opts.ReportFrequency = DefaultReportFrequency
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{
		opts:    opts,
		client:  opts.Client,
		cfg:     opts.Config,
		clock:   opts.Clock,
		trigger: make(chan struct{}, 1),
		ready:   make(chan struct{}),
	}, nil
}

// Node returns the latest Node the API server returned or the informer
// delivered, or nil before registration. Callers must not modify it.
func (c *Controller) Node() *v1.Node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.latest
}

// Ready is closed once the Node is registered and its status written.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Trigger asks for a status check now (e.g. runtime readiness changed). It
// never blocks; triggers coalesce.
func (c *Controller) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// Start registers the Node, then keeps its status current until ctx ends.
// It returns nil when ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("node", c.cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)

	inf := coreinformers.NewFilteredNodeInformer(c.client, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.cfg.NodeName).String()
	})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.observe,
		UpdateFunc: func(_, obj any) { c.observe(obj) },
		DeleteFunc: func(obj any) { c.observeDelete(ctx, obj) },
	}); err != nil {
		return fmt.Errorf("watching node %s: %w", c.cfg.NodeName, err)
	}
	// Run the informer until Start returns, and wait for it to stop.
	infCtx, stopInformer := context.WithCancel(ctx)
	informerDone := make(chan struct{})
	go func() { defer close(informerDone); inf.RunWithContext(infCtx) }()
	defer func() { stopInformer(); <-informerDone }()

	ticker := c.clock.NewTicker(c.opts.UpdateFrequency)
	defer ticker.Stop()
	backoff := registerBackoffInitial
	for {
		if !c.isRegistered() {
			if err := c.register(ctx); err != nil {
				logger.Error(err, "Unable to register node, will retry", "after", backoff)
				select {
				case <-ctx.Done():
					return nil
				case <-c.clock.After(backoff):
				}
				backoff = min(2*backoff, registerBackoffMax)
				continue
			}
			backoff = registerBackoffInitial
		}
		if err := c.syncStatus(ctx); err != nil {
			logger.Error(err, "Unable to update node status")
		} else if c.isRegistered() {
			c.readyOnce.Do(func() { close(c.ready) })
		}
		if !c.isRegistered() {
			continue // deleted under us: register again at once
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		case <-c.trigger:
		}
	}
}

func (c *Controller) isRegistered() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.registered
}

func (c *Controller) observe(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok || node.Name != c.cfg.NodeName {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.registered {
		c.latest = node
	}
}

func (c *Controller) observeDelete(ctx context.Context, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok || node.Name != c.cfg.NodeName {
		return
	}
	c.mu.Lock()
	if c.latest != nil && node.UID != "" && c.latest.UID != node.UID {
		c.mu.Unlock()
		return // an older incarnation
	}
	c.markUnregisteredLocked()
	c.mu.Unlock()
	klog.FromContext(ctx).Info("Node was deleted, registering it again")
	c.Trigger()
}

func (c *Controller) markUnregisteredLocked() {
	c.registered = false
	c.latest = nil
	c.lastReport = time.Time{}
}

// nodeFacts asks the provider for the facts, falling back to the last
// good ones.
func (c *Controller) nodeFacts(ctx context.Context) (Facts, error) {
	f, err := c.opts.Facts.NodeFacts(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.facts, c.haveFacts = f, true
		return f, nil
	}
	if c.haveFacts {
		klog.FromContext(ctx).Error(err, "Unable to read node facts, using the last ones")
		return c.facts, nil
	}
	return Facts{}, fmt.Errorf("reading node facts: %w", err)
}

// register creates the Node, or reconciles the existing one.
func (c *Controller) register(ctx context.Context) error {
	facts, err := c.nodeFacts(ctx)
	if err != nil {
		return err
	}
	node := NewNode(&c.cfg, facts)
	SetStatus(node, &c.cfg, facts, metav1.NewTime(c.clock.Now()))
	nodes := c.client.CoreV1().Nodes()
	c.opts.Startup.attempt(c.clock.Now())
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		klog.FromContext(ctx).Info("Registered node")
		now := c.clock.Now()
		c.setRegistered(created, now)
		c.opts.Startup.created(now)
		c.opts.Startup.reported(created, now)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating node: %w", err)
	}
	existing, getErr := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if getErr != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("creating node: %w", err)
		}
		return fmt.Errorf("getting existing node: %w", getErr)
	}
	klog.FromContext(ctx).Info("Node was previously registered, reconciling it")
	original := existing.DeepCopy()
	if ReconcileExisting(node, existing) {
		patched, err := c.patchStatus(ctx, original, existing)
		if err != nil {
			return fmt.Errorf("reconciling existing node: %w", err)
		}
		existing = patched
	}
	// The status of a reused Node is stale: write it at the next check.
	c.setRegistered(existing, time.Time{})
	return nil
}

func (c *Controller) setRegistered(node *v1.Node, reported time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered = true
	c.latest = node
	c.lastReport = reported
}

// syncStatus computes the status and writes it when it changed or the
// report frequency has passed.
func (c *Controller) syncStatus(ctx context.Context) error {
	facts, err := c.nodeFacts(ctx)
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := 0; attempt < patchAttempts; attempt++ {
		base, err := c.statusBase(ctx, attempt)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return c.lostNode(ctx)
			}
			lastErr = err
			continue
		}
		updated := base.DeepCopy()
		ensureOSArchLabels(updated, facts.Labels)
		now := c.clock.Now()
		SetStatus(updated, &c.cfg, facts, metav1.NewTime(now))
		c.mu.RLock()
		expired := c.lastReport.IsZero() || now.Sub(c.lastReport) >= c.opts.ReportFrequency
		c.mu.RUnlock()
		labelsChanged := !mapsEqual(base.Labels, updated.Labels)
		if !expired && !labelsChanged && !StatusChanged(&base.Status, &updated.Status) {
			return nil
		}
		patched, err := c.patchStatus(ctx, base, updated)
		if err == nil {
			c.opts.Startup.reported(patched, c.clock.Now())
			c.mu.Lock()
			if c.registered {
				c.latest = patched
				c.lastReport = now
			}
			c.mu.Unlock()
			return nil
		}
		if apierrors.IsNotFound(err) {
			return c.lostNode(ctx)
		}
		lastErr = err
	}
	return fmt.Errorf("patching node status, %d attempts: %w", patchAttempts, lastErr)
}

// statusBase is the Node to compute the status on: the latest known one
// first, a fresh GET on retries.
func (c *Controller) statusBase(ctx context.Context, attempt int) (*v1.Node, error) {
	if attempt == 0 {
		if n := c.Node(); n != nil {
			return n, nil
		}
	}
	n, err := c.client.CoreV1().Nodes().Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.registered {
		c.latest = n
	}
	c.mu.Unlock()
	return n, nil
}

func (c *Controller) lostNode(ctx context.Context) error {
	klog.FromContext(ctx).Info("Node not found, registering it again")
	c.mu.Lock()
	c.markUnregisteredLocked()
	c.mu.Unlock()
	return nil
}

func (c *Controller) patchStatus(ctx context.Context, original, updated *v1.Node) (*v1.Node, error) {
	patch, err := StatusPatch(original, updated)
	if err != nil {
		return nil, err
	}
	return c.client.CoreV1().Nodes().Patch(ctx, c.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// ensureOSArchLabels restores the stable os/arch labels of the facts if
// someone removed or changed them (the scheduler relies on them).
func ensureOSArchLabels(node *v1.Node, facts map[string]string) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for _, k := range []string{v1.LabelOSStable, v1.LabelArchStable} {
		if v := facts[k]; v != "" {
			node.Labels[k] = v
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
