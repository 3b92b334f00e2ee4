package virtual

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// listTimeout bounds one ListPods call.
const listTimeout = time.Minute

// providerLoop registers the engine with the provider's notifier (when it
// has one) and lists the provider: once at start, after the pod informer
// synced (adopting what a restarted kubelet's provider runs), then every
// PollInterval without a notifier or ResyncInterval with one. It is ready
// after the first list, successful or not.
type providerLoop struct{ e *Engine }

func (l *providerLoop) Ready() <-chan struct{} { return l.e.ready.Ready() }

func (l *providerLoop) Start(ctx context.Context) error {
	e := l.e
	log := klog.FromContext(ctx)
	interval := e.cfg.PollInterval
	if n, ok := e.prov.(provider.PodNotifier); ok {
		n.NotifyPods(ctx, e.onProviderPod)
		interval = e.cfg.ResyncInterval
		log.V(2).Info("Provider pushes pod status changes", "resyncInterval", interval)
	} else {
		log.Info("Provider has no notifier; polling it", "pollInterval", interval)
	}
	if !cache.WaitForCacheSync(ctx.Done(), e.informer.HasSynced) {
		return nil
	}
	e.list(ctx)
	e.ready.MarkReady()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			e.list(ctx)
		}
	}
}

// onProviderPod is the notifier's callback: it records the provider's
// view and queues the key. It never blocks. A notification about a key the
// engine does not follow is taken as a possible orphan only when the pod
// still runs; the periodic list finds the rest.
func (e *Engine) onProviderPod(p *v1.Pod) {
	if p == nil || (p.Spec.NodeName != "" && p.Spec.NodeName != e.cfg.NodeName) {
		return // never act on another node's pods
	}
	key := keyOf(p.Namespace, p.Name)
	e.mu.Lock()
	st := e.pods[key]
	if st == nil {
		if p.DeletionTimestamp != nil || podstatus.IsTerminal(p.Status.Phase) {
			e.mu.Unlock()
			return
		}
		st = &podState{key: key, uid: p.UID, created: true}
		e.pods[key] = st
		e.byUID[p.UID] = st
	}
	st.observed = p
	if p.UID == st.uid {
		st.missing = 0
	}
	e.mu.Unlock()
	e.queue.Add(key)
}

// list compares the provider's pods with what the engine follows: new
// statuses are queued (polling), pods of keys the engine does not follow
// are queued as orphans (the sync deletes them when the API has no such
// pod), and pods the provider created but no longer lists are counted
// towards being lost.
func (e *Engine) list(ctx context.Context) {
	log := klog.FromContext(ctx)
	started := e.now()
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	pods, err := e.prov.ListPods(lctx)
	cancel()
	if err != nil {
		log.Error(err, "Listing the provider's pods failed; will retry", "provider", e.cfg.ProviderType)
		return
	}
	seen := make(map[string]bool, len(pods))
	var queue []string
	e.mu.Lock()
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Spec.NodeName != e.cfg.NodeName {
			continue // never touch another node's pods
		}
		key := keyOf(p.Namespace, p.Name)
		seen[key] = true
		st := e.pods[key]
		if st == nil {
			st = &podState{key: key, uid: p.UID, created: true, observed: p}
			e.pods[key] = st
			e.byUID[p.UID] = st
			queue = append(queue, key)
			continue
		}
		if p.UID == st.uid {
			st.created, st.missing = true, 0
		}
		if st.observed == nil || st.observed.UID != p.UID || !apiequality.Semantic.DeepEqual(st.observed.Status, p.Status) {
			st.observed = p
			queue = append(queue, key)
		}
	}
	for key, st := range e.pods {
		if seen[key] || !st.created || st.deleteSent || st.failed || st.finalized || st.createdAt.After(started) {
			continue
		}
		st.missing++
		if st.missing >= lostAfterLists && !st.lost {
			st.lost = true
			queue = append(queue, key)
		}
	}
	e.mu.Unlock()
	for _, k := range queue {
		e.queue.Add(k)
	}
}
