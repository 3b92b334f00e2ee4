package apiserver

import (
	"context"
	"errors"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Source sends the pods bound to one node. Create it with New and start
// it with Run.
type Source struct {
	client   kubernetes.Interface
	nodeName string
	updates  chan<- podconfig.PodUpdate

	// dirty (capacity 1) tells the sender the store changed.
	dirty chan struct{}
	store cache.Store
	ctrl  cache.Controller
}

// New returns a source for nodeName's pods that sends on updates (usually
// merger.Channel(podspec.SourceAPI)).
func New(client kubernetes.Interface, nodeName string, updates chan<- podconfig.PodUpdate) *Source {
	s := &Source{
		client:   client,
		nodeName: nodeName,
		updates:  updates,
		dirty:    make(chan struct{}, 1),
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
		},
	}
	s.store, s.ctrl = cache.NewInformerWithOptions(cache.InformerOptions{
		// The reflector asks the client whether it streams lists (client-go
		// 0.35+ uses WatchList by default; a fake clientset cannot).
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { s.markDirty() },
			UpdateFunc: func(oldObj, newObj any) {
				// A relist replays every pod; unchanged ones need no send.
				o, ok1 := oldObj.(*v1.Pod)
				n, ok2 := newObj.(*v1.Pod)
				if ok1 && ok2 && o.ResourceVersion == n.ResourceVersion && o.ResourceVersion != "" {
					return
				}
				s.markDirty()
			},
			DeleteFunc: func(any) { s.markDirty() },
		},
	})
	return s
}

func (s *Source) markDirty() {
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// HasSynced reports whether the initial list has reached the store.
func (s *Source) HasSynced() bool { return s.ctrl.HasSynced() }

// Start watches and sends until ctx ends, then returns nil. It returns an
// error only for a configuration that can never work. Run must be called
// once.
func (s *Source) Start(ctx context.Context) error {
	if s.nodeName == "" {
		return errors.New("node name is empty")
	}
	if s.client == nil {
		return errors.New("no API server client")
	}
	logger := klog.FromContext(ctx).WithName("apiserver-source").WithValues("node", s.nodeName)
	ctx = klog.NewContext(ctx, logger)

	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ctrl.RunWithContext(ctx)
	}()
	defer func() { <-done }()

	if !cache.WaitForCacheSync(ctx.Done(), s.ctrl.HasSynced) {
		return nil
	}
	logger.V(2).Info("Pod informer synced")
	s.markDirty() // the first set is sent even when empty
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.dirty:
		}
		if !s.send(ctx, s.snapshot()) {
			return nil
		}
	}
}

// send hands the consumer the node's pods as one SET; false when ctx ended
// first, for a consumer that is gone must not hold the source.
func (s *Source) send(ctx context.Context, pods []*v1.Pod) bool {
	select {
	case s.updates <- podconfig.PodUpdate{Op: podconfig.SET, Source: podspec.SourceAPI, Pods: pods}:
		klog.FromContext(ctx).V(4).Info("Sent pods", "count", len(pods))
		return true
	case <-ctx.Done():
		return false
	}
}

// snapshot returns the store's pods bound to this node, by namespace/name.
// The pods are the informer's objects, which nobody modifies.
func (s *Source) snapshot() []*v1.Pod {
	objs := s.store.List()
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok && p.Spec.NodeName == s.nodeName {
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}
