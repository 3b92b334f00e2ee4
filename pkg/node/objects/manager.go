// Package objects gives the kubelet the API objects its pods reference:
// ConfigMaps and Secrets (for volumes and environment variables) and
// service account tokens (for projected volumes).
//
// The Node authorizer lets a node read only the objects referenced by
// pods bound to it, one by one: a cluster-wide informer is refused. So the
// Manager keeps one watch per referenced object (a list and watch with a
// metadata.name field selector), started when the first pod referencing
// it is registered and stopped when the last one is unregistered. Reads
// are served from the watch's cache and are current within the watch's
// latency; a change is reported through OnChange so volumes can be
// rewritten at once.
package objects

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Getter reads the ConfigMaps and Secrets of the pods on this node. An
// object that does not exist is an error for which apierrors.IsNotFound
// is true. The object returned is the caller's own copy.
type Getter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ErrStandalone is returned by every read of a kubelet without an API
// server.
var ErrStandalone = errors.New("the kubelet runs without an API server")

// Options configure a Manager.
type Options struct {
	// Client reads the objects; nil is standalone mode (every read fails
	// with ErrStandalone).
	Client kubernetes.Interface
	// SyncTimeout bounds how long a read waits for a new watch's first
	// list (default 10s).
	SyncTimeout time.Duration
	// OnChange, when set, is called (from a watch goroutine) after a
	// watched object was created, changed or deleted.
	OnChange func(Ref)
}

// Manager implements Getter with per-object watches scoped to the
// registered pods.
type Manager struct {
	opts Options

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pods    map[types.UID][]Ref
	watches map[Ref]*objectWatch
}

type objectWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	users    int

	errMu   sync.Mutex
	lastErr error
}

var _ Getter = (*Manager)(nil)

// New returns a Manager. Run stops its watches when its context ends.
func New(opts Options) *Manager {
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, ctx: ctx, cancel: cancel, pods: map[types.UID][]Ref{}, watches: map[Ref]*objectWatch{}}
}

// Start blocks until ctx ends, then stops every watch.
func (m *Manager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.cancel()
	return nil
}

// RegisterPod records the objects pod references (see References) and
// starts watching those not watched yet; objects it no longer references
// are released. Call it whenever the pod's spec may have changed; it is
// cheap when nothing did.
func (m *Manager) RegisterPod(pod *v1.Pod) {
	if m.opts.Client == nil {
		return
	}
	refs := References(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.pods[pod.UID]
	if equalRefs(old, refs) {
		return
	}
	for _, r := range refs {
		m.acquire(r)
	}
	for _, r := range old {
		m.release(r)
	}
	if len(refs) == 0 {
		delete(m.pods, pod.UID)
	} else {
		m.pods[pod.UID] = refs
	}
}

// UnregisterPod releases every object the pod referenced.
func (m *Manager) UnregisterPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.pods[uid] {
		m.release(r)
	}
	delete(m.pods, uid)
}

// Watched lists the objects watched now (for tests and debugging).
func (m *Manager) Watched() []Ref {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Ref, 0, len(m.watches))
	for r := range m.watches {
		out = append(out, r)
	}
	return out
}

func equalRefs(a, b []Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (m *Manager) acquire(r Ref) {
	if w := m.watches[r]; w != nil {
		w.users++
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w := &objectWatch{cancel: cancel, users: 1}
	w.informer = cache.NewSharedIndexInformer(m.listWatch(r), exampleObject(r.Kind), 0, cache.Indexers{})
	_ = w.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		w.errMu.Lock()
		w.lastErr = err
		w.errMu.Unlock()
		klog.FromContext(ctx).V(2).Info("Watch of a referenced object failed; retrying", "object", r.String(), "err", err)
	})
	if m.opts.OnChange != nil {
		notify := func(obj any) {
			if meta, err := metaOf(obj); err == nil && meta.GetName() != r.Name {
				return // a fake client ignores field selectors
			}
			m.opts.OnChange(r)
		}
		_, _ = w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if !initial {
					notify(obj)
				}
			},
			UpdateFunc: func(old, cur any) {
				o, err1 := metaOf(old)
				c, err2 := metaOf(cur)
				if err1 == nil && err2 == nil && o.GetResourceVersion() == c.GetResourceVersion() {
					return
				}
				notify(cur)
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				notify(obj)
			},
		})
	}
	m.watches[r] = w
	go w.informer.RunWithContext(ctx)
}

func (m *Manager) release(r Ref) {
	w := m.watches[r]
	if w == nil {
		return
	}
	if w.users--; w.users <= 0 {
		w.cancel()
		delete(m.watches, r)
	}
}

func metaOf(obj any) (metav1.Object, error) {
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, fmt.Errorf("not an object: %T", obj)
}

func exampleObject(k Kind) runtime.Object {
	if k == Secret {
		return &v1.Secret{}
	}
	return &v1.ConfigMap{}
}

// listWatch lists and watches exactly one object, by name.
func (m *Manager) listWatch(r Ref) cache.ListerWatcher {
	sel := fields.OneTermEqualSelector("metadata.name", r.Name).String()
	core := m.opts.Client.CoreV1()
	// The reflector asks the client whether it streams lists (client-go
	// 0.35+ uses WatchList by default; a fake clientset cannot).
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			if r.Kind == Secret {
				return core.Secrets(r.Namespace).List(ctx, o)
			}
			return core.ConfigMaps(r.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			if r.Kind == Secret {
				return core.Secrets(r.Namespace).Watch(ctx, o)
			}
			return core.ConfigMaps(r.Namespace).Watch(ctx, o)
		},
	}, m.opts.Client)
}

// GetConfigMap implements Getter.
func (m *Manager) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := m.get(ctx, Ref{Kind: ConfigMap, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap).DeepCopy(), nil
}

// GetSecret implements Getter.
func (m *Manager) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := m.get(ctx, Ref{Kind: Secret, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret).DeepCopy(), nil
}

func resource(k Kind) string {
	if k == Secret {
		return "secrets"
	}
	return "configmaps"
}

func (m *Manager) get(ctx context.Context, r Ref) (any, error) {
	if m.opts.Client == nil {
		return nil, fmt.Errorf("cannot read %s: %w", r, ErrStandalone)
	}
	m.mu.Lock()
	w := m.watches[r]
	m.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("%s is not referenced by any registered pod", r)
	}
	if !w.informer.HasSynced() {
		ctx, cancel := context.WithTimeout(ctx, m.opts.SyncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			w.errMu.Lock()
			last := w.lastErr
			w.errMu.Unlock()
			if last != nil {
				return nil, fmt.Errorf("reading %s: %w", r, last)
			}
			return nil, fmt.Errorf("reading %s: no answer from the API server within %v", r, m.opts.SyncTimeout)
		}
	}
	obj, ok, err := w.informer.GetStore().GetByKey(r.Namespace + "/" + r.Name)
	if err != nil {
		return nil, err
	}
	if !ok {
		gr := v1.Resource(resource(r.Kind))
		return nil, apierrors.NewNotFound(gr, r.Name)
	}
	return obj, nil
}
