package virtual

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// Defaults of Config.
const (
	DefaultWorkers = 50
	// DefaultStatusWorkers is how many pod status writes a virtual node
	// has in flight (its core's status writer): a provider's pods change
	// status as fast as it reports them, and each change is one PATCH.
	// The writes' throughput is this over a PATCH's round trip, which is
	// about 0.1 s on a busy API server: 50 capped it near 450 writes/s,
	// below what the server carries, so a burst of pods waited for a
	// writer after the server had room (make bench-scale). The API
	// server's priority and fairness queues the surplus.
	DefaultStatusWorkers       = 100
	DefaultRetryBase           = 200 * time.Millisecond
	DefaultRetryMax            = 2 * time.Minute
	DefaultPollInterval        = 2 * time.Second
	DefaultResyncInterval      = time.Minute
	DefaultDeleteCheckInterval = 2 * time.Second
	// providerCallTimeout bounds one provider call made by a worker.
	providerCallTimeout = 2 * time.Minute
	// lostAfterLists is how many provider lists in a row must miss a pod
	// it created before the pod is reported lost.
	lostAfterLists = 2
)

// Config configures an Engine. Zero values take the defaults.
type Config struct {
	// NodeName is the virtual node's name.
	NodeName string
	// ProviderType names the provider in messages and events.
	ProviderType string
	// HostIPs are the node's IPs: pods' hostIP when the provider gives
	// none, and status.hostIP in the downward API.
	HostIPs []string
	// Workers sync pods in parallel (default 50). Throughput is about
	// Workers divided by the provider's call latency.
	Workers int
	// RetryBase and RetryMax bound the per-pod exponential back-off after
	// a failure (default 200ms and 2m).
	RetryBase, RetryMax time.Duration
	// RetryQPS, when positive, also limits retries overall (RetryBurst
	// default 10× RetryQPS). New events are never rate limited.
	RetryQPS   float64
	RetryBurst int
	// PollInterval is how often a provider without a notifier is listed
	// for status changes (default 2s).
	PollInterval time.Duration
	// ResyncInterval is how often a provider with a notifier is listed to
	// find pods to clean up or that were lost (default 1m).
	ResyncInterval time.Duration
	// DeleteCheckInterval is how often the provider is asked whether a
	// deleted pod is gone, until its grace period ends (default 2s; a
	// notifier usually answers first).
	DeleteCheckInterval time.Duration
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.RetryQPS > 0 && c.RetryBurst <= 0 {
		c.RetryBurst = int(10 * c.RetryQPS)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ResyncInterval <= 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	if c.DeleteCheckInterval <= 0 {
		c.DeleteCheckInterval = DefaultDeleteCheckInterval
	}
	if c.ProviderType == "" {
		c.ProviderType = "provider"
	}
}

// Deps are what an Engine is built from.
type Deps struct {
	// Core is the virtual node's core (built with node.New, with Facts
	// backed by the same provider).
	Core *node.Core
	// Client reaches the API server.
	Client kubernetes.Interface
	// WatchClient, when set, carries the pod informer's list and watch on
	// a connection apart from Client's writes (node.Clients.Watch): the
	// API server closes a watch of one node's pods that falls 10 events
	// behind, and at thousands of pods it does behind the status writes'
	// responses on a shared connection.
	WatchClient kubernetes.Interface
	// Provider runs the pods.
	Provider provider.Provider
	// Objects reads ConfigMaps and Secrets for the environment.
	Objects provider.ObjectGetter
	// Services gives the service link variables (nil: none).
	Services ServiceLister
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Engine runs a virtual node's pods through its provider.
type Engine struct {
	cfg      Config
	core     *node.Core
	prov     provider.Provider
	keepRefs bool
	env      *envResolver
	now      func() time.Time
	queue    workqueue.TypedRateLimitingInterface[string]
	informer cache.SharedIndexInformer

	// ready is closed once the informer synced and the provider was
	// listed once (or failed to be): workers start after it.
	ready runnable.ReadyOnce

	mu    sync.Mutex
	pods  map[string]*podState // by namespace/name
	byUID map[types.UID]*podState
}

// podState is what the engine knows about the pod of one key. Fields are
// guarded by Engine.mu; a key is synced by one worker at a time.
type podState struct {
	key string
	// uid is the API pod this state follows.
	uid types.UID
	// observed is the provider's latest view of the pod under this key
	// (its UID may be an older incarnation's).
	observed *v1.Pod
	// applied is the observed pod whose status was last handed on.
	applied *v1.Pod
	// last is the status last given to the status writer.
	last *v1.PodStatus
	// created: the provider has (or had) the pod: CreatePod succeeded or a
	// list showed it. createdAt is when (zero when adopted from a list).
	created   bool
	createdAt time.Time
	// hash of what was last given to the provider (spec and metadata).
	hash uint64
	// deleteSent: DeletePod succeeded; gone: the provider confirmed the
	// pod gone.
	deleteSent, gone bool
	// terminated: nothing of the pod runs or will run again; finalized:
	// its API object may be deleted.
	terminated, finalized bool
	// failed: the engine ended the pod Failed (the provider refused it for
	// good, or lost it); nothing more is done until it is deleted.
	failed bool
	// missing counts provider lists in a row that lacked the pod; lost is
	// set once it reached lostAfterLists.
	missing int
	lost    bool
}

// New builds the engine and attaches it to the core as its Lifecycle.
func New(cfg Config, d Deps) (*Engine, error) {
	if d.Core == nil || d.Client == nil || d.Provider == nil {
		return nil, errors.New("virtual: Core, Client and Provider are required")
	}
	if cfg.NodeName == "" {
		cfg.NodeName = d.Core.Name()
	}
	cfg.defaults()
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Objects == nil {
		d.Objects = ClientObjects{Client: d.Client}
	}
	limiter := workqueue.TypedRateLimiter[string](workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.RetryBase, cfg.RetryMax))
	if cfg.RetryQPS > 0 {
		limiter = workqueue.NewTypedMaxOfRateLimiter(limiter,
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(cfg.RetryQPS), cfg.RetryBurst)})
	}
	e := &Engine{
		cfg:   cfg,
		core:  d.Core,
		prov:  d.Provider,
		now:   d.Now,
		pods:  map[string]*podState{},
		byUID: map[types.UID]*podState{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "virtual_pods_" + cfg.NodeName}),
	}
	if k, ok := d.Provider.(provider.ObjectRefKeeper); ok {
		e.keepRefs = k.KeepsObjectRefs()
	}
	e.env = &envResolver{objects: d.Objects, services: d.Services, hostIPs: cfg.HostIPs, allocatable: e.allocatable}
	watcher := d.WatchClient
	if watcher == nil {
		watcher = d.Client
	}
	e.informer = newPodInformer(watcher, cfg.NodeName)
	if _, err := e.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    e.onAPIPod,
		UpdateFunc: func(old, cur any) { e.onAPIUpdate(old, cur) },
		DeleteFunc: e.onAPIDelete,
	}); err != nil {
		return nil, fmt.Errorf("virtual node %s: pod informer: %w", cfg.NodeName, err)
	}
	d.Core.SetLifecycle(e)
	return e, nil
}

// newPodInformer watches the pods bound to nodeName (one LIST, then a
// WATCH, selected on spec.nodeName as a kubelet does).
func newPodInformer(client kubernetes.Interface, nodeName string) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	// The reflector asks the client whether it streams lists (client-go
	// 0.35+ uses WatchList by default; a fake clientset cannot).
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Pod{}, 0, cache.Indexers{})
}

// AddTo adds the engine's loops: the pod informer and the provider loop
// (notifier registration, polls and resyncs) to start, and the workers to
// work, a later stage, so no pod is synced before the informer synced and
// the provider was listed once (a restarted kubelet adopts what the
// provider runs instead of creating it again).
func (e *Engine) AddTo(start, work *runnable.Stage) {
	start.Add("pod-informer", runnable.Func(e.runInformer)).
		Add("provider-sync", &providerLoop{e: e})
	work.Add("pod-sync", runnable.Func(e.runWorkers))
}

func (e *Engine) runInformer(ctx context.Context) error {
	e.informer.RunWithContext(ctx)
	return nil
}

func (e *Engine) runWorkers(ctx context.Context) error {
	log := klog.FromContext(ctx)
	log.Info("Starting virtual node pod workers", "node", e.cfg.NodeName, "workers", e.cfg.Workers, "provider", e.cfg.ProviderType)
	var wg sync.WaitGroup
	for range e.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	e.queue.ShutDown()
	wg.Wait()
	return nil
}

func (e *Engine) processNext(ctx context.Context) bool {
	key, quit := e.queue.Get()
	if quit {
		return false
	}
	defer e.queue.Done(key)
	log := klog.FromContext(ctx).WithValues("pod", key)
	after, err := e.syncPod(klog.NewContext(ctx, log), key)
	switch {
	case err != nil:
		log.V(2).Info("Pod sync failed, will retry", "err", err)
		e.queue.AddRateLimited(key)
	case after > 0:
		e.queue.Forget(key)
		e.queue.AddAfter(key, after)
	default:
		e.queue.Forget(key)
	}
	return true
}

// ---- informer handlers (never block) ------------------------------------

func (e *Engine) ownPod(obj any) (*v1.Pod, bool) {
	p, ok := obj.(*v1.Pod)
	if !ok || p.Spec.NodeName != e.cfg.NodeName || podspec.IsMirror(p) {
		return nil, false
	}
	return p, true
}

func (e *Engine) onAPIPod(obj any) {
	if p, ok := e.ownPod(obj); ok {
		e.core.Pods().AddOrUpdate(p)
		e.queue.Add(keyOf(p.Namespace, p.Name))
	}
}

func (e *Engine) onAPIUpdate(old, cur any) {
	p, ok := e.ownPod(cur)
	if !ok {
		return
	}
	o, ok := old.(*v1.Pod)
	if ok && o.ResourceVersion == p.ResourceVersion && p.ResourceVersion != "" {
		return // a relist replaying an unchanged pod
	}
	// The core's copy always follows the API (the status writer patches
	// from it).
	e.core.Pods().AddOrUpdate(p)
	if ok && !syncNeeded(o, p) {
		// Most updates are the status writer's own PATCHes coming back:
		// nothing to do for them.
		return
	}
	e.queue.Add(keyOf(p.Namespace, p.Name))
}

// syncNeeded reports whether an update of an API pod can change what the
// engine does with it: another incarnation, a changed spec or generation,
// labels or annotations (the provider gets them), the deletion, or the
// conditions others own (readiness gates decide Ready). An update of only
// the rest of the status — the engine's own writes coming back — cannot.
func syncNeeded(old, cur *v1.Pod) bool {
	if old.UID != cur.UID || old.Generation != cur.Generation ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		!equalPtr(old.DeletionGracePeriodSeconds, cur.DeletionGracePeriodSeconds) ||
		!maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
		!sameOthersConditions(old.Status.Conditions, cur.Status.Conditions) {
		return true
	}
	return !apiequality.Semantic.DeepEqual(&old.Spec, &cur.Spec)
}

// sameOthersConditions reports whether two condition lists agree on the
// conditions the kubelet does not own (type and status).
func sameOthersConditions(a, b []v1.PodCondition) bool {
	others := func(l []v1.PodCondition) map[v1.PodConditionType]v1.ConditionStatus {
		m := map[v1.PodConditionType]v1.ConditionStatus{}
		for _, c := range l {
			if !podstatus.IsOwnedCondition(c.Type) {
				m[c.Type] = c.Status
			}
		}
		return m
	}
	return maps.Equal(others(a), others(b))
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (e *Engine) onAPIDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok || podspec.IsMirror(p) {
		return
	}
	e.core.Pods().Remove(p)
	e.queue.Add(keyOf(p.Namespace, p.Name))
}

// apiPod is the informer's copy of the pod of key (nil when none).
func (e *Engine) apiPod(key string) *v1.Pod {
	obj, ok, _ := e.informer.GetStore().GetByKey(key)
	if !ok {
		return nil
	}
	p, ok := e.ownPod(obj)
	if !ok {
		return nil
	}
	return p
}

func keyOf(ns, name string) string { return ns + "/" + name }

// ---- node.Lifecycle -------------------------------------------------------

// PodTerminated reports that nothing of the pod runs or will run again.
func (e *Engine) PodTerminated(uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.byUID[uid]
	return !ok || st.terminated
}

// CanBeDeleted reports that a deleted pod is gone from the provider (or
// its grace period ended), so its API object can go.
func (e *Engine) CanBeDeleted(pod *v1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.byUID[pod.UID]
	return !ok || st.finalized
}

// RunsStaticPod: a virtual node has no static pods.
func (e *Engine) RunsStaticPod(types.UID) bool { return false }

// ---- helpers ----------------------------------------------------------------

// allocatable is the node's allocatable as registered (resourceFieldRef
// defaults).
func (e *Engine) allocatable() v1.ResourceList {
	if n := e.core.Node(); n != nil {
		return n.Status.Allocatable
	}
	return nil
}

// Ready is closed once the engine may sync pods (informer synced, provider
// listed once).
func (e *Engine) Ready() <-chan struct{} { return e.ready.Ready() }

// HealthCheck fails while the informer has not synced.
func (e *Engine) HealthCheck() error {
	if !e.informer.HasSynced() {
		return fmt.Errorf("virtual node %s: pod informer not synced", e.cfg.NodeName)
	}
	return nil
}

// Provider is the node's provider.
func (e *Engine) Provider() provider.Provider { return e.prov }

// Pods returns the node's pods with their latest status (/pods).
func (e *Engine) Pods() []*v1.Pod { return e.core.PodsWithStatus() }

// GetPodByName returns the node's pod with that namespace and name (the
// kubelet API's logs, exec, attach and port-forward targets).
func (e *Engine) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return e.core.Pods().GetByFullName(namespace + "/" + name)
}

// RunningPods returns the pods the provider runs for this node
// (/runningpods/).
func (e *Engine) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	return e.prov.ListPods(ctx)
}
