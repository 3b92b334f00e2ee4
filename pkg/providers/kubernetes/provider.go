// Package kubernetes is the provider that runs a virtual node's pods in
// another Kubernetes cluster (the target), given by a kubeconfig.
//
// Each pod becomes a pod of the same name in the mapped target namespace
// (namespacePrefix + namespace, or an explicit mapping), created after
// copies of what it references: the ConfigMaps and Secrets of its volumes,
// env and image pull secrets (renamed <name>-<hash>, so pods never share
// or overwrite a copy), a service account token of the origin cluster
// (TokenRequest bound to the origin pod, refreshed before it expires) for
// each projected token, and the origin values of downward API volume
// items. The copies are owned by the target pod, so the target's garbage
// collector deletes them with it.
//
// Ownership and trust (owned.go): the target's tenants may write whatever
// they like into the mapped namespaces, so nothing there decides what the
// provider does. Every object it creates carries gokubelet.io/virtual-node=
// <node> (and the origin pod's UID), but that label only narrows its
// informer and tells humans whose copy it is. What the provider acts on is
// its own record, in memory (and in its state directory) only it writes:
// target pod (namespace, name, UID as returned on create) <-> origin pod
// (namespace, name, UID), and the token copies it minted. A target pod
// that is not a record's, even labelled and annotated as one, is ignored:
// it reports no status and its deletion fails nothing. Token copies are
// renewed from the records, each TokenRequest bound to the origin pod by
// name and UID, and written only into the Secret (by UID) the provider
// created. It never takes over a same-named object it did not create, and
// never deletes namespaces. Tolerations of the virtual node taint are not
// copied, so a copy never lands on a virtual node.
//
// Status: an informer on the target's pods (selected by the label) keeps
// GetPod, GetPodStatus and ListPods in memory and pushes every change of a
// recorded pod to the engine (provider.PodNotifier): phase, conditions,
// container states and pod IPs, mirrored as the origin's pod. Capacity is the sum of the
// allocatable of the target's Ready, schedulable nodes that a copy can
// land on (no virtual node taint). Logs, exec, attach and port-forward
// are proxied to the target's API server. Stats (/stats/summary,
// /metrics/resource) come from the target's metrics API (stats.go).
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// Type is the provider's name in the configuration.
const Type = "kubernetes"

// tokenRefreshPeriod is how often token copies are checked for renewal.
const tokenRefreshPeriod = time.Minute

// Provider runs pods in a target cluster. Build it with New; it must be
// started (Start) before its pods are asked for.
type Provider struct {
	cfg      Config
	node     string
	selector labels.Selector

	target     kubernetes.Interface
	targetREST *rest.Config
	origin     kubernetes.Interface
	objects    provider.ObjectGetter

	podInformer  cache.SharedIndexInformer
	pods         corelisters.PodLister
	nodeInformer cache.SharedIndexInformer
	nodes        corelisters.NodeLister

	runnable.ReadyOnce

	// stateDir keeps the records of what the provider created (owned.go);
	// "" keeps them in memory only.
	stateDir string
	records  *records
	// now is the clock of token renewal.
	now func() time.Time

	// Stats (stats.go): the target's PodMetrics of a namespace, the
	// counters that integrate them, and when the provider was built (the
	// node's start time in the summary).
	podMetrics podMetricsLister
	stats      statsState
	started    time.Time

	mu      sync.Mutex
	notify  func(*v1.Pod)
	version string
	// namespaces known to exist in the target.
	namespaces map[string]bool
	// owned are the pods this provider created, by origin namespace/name;
	// byTarget the same records by target namespace/name.
	owned    map[string]*ownedPod
	byTarget map[string]*ownedPod
}

// New builds the provider from its providerConfig (provider.Factory). It
// does not contact the target cluster.
func New(_ context.Context, ic provider.InitConfig) (provider.Provider, error) {
	cfg, err := ParseConfig(ic.Config, ic.ConfigDir)
	if err != nil {
		return nil, err
	}
	if ic.Client == nil || ic.Objects == nil {
		return nil, errors.New("kubernetes provider: the origin cluster's client is required")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: target kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = cfg.KubeAPIQPS, cfg.KubeAPIBurst
	rc.UserAgent = "gokubelet-virtual-node/" + ic.NodeName
	target, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: target client: %w", err)
	}
	p := NewForClients(ic.NodeName, cfg, target, rc, ic.Client, ic.Objects)
	if p.records, err = newRecords(ic.StateDir); err != nil {
		return nil, err
	}
	p.stateDir = ic.StateDir
	return p, nil
}

// NewForClients builds the provider from clients (tests).
func NewForClients(node string, cfg Config, target kubernetes.Interface, targetREST *rest.Config, origin kubernetes.Interface, objects provider.ObjectGetter) *Provider {
	sel := labels.SelectorFromSet(labels.Set{LabelNode: nodeLabelValue(node)})
	podInformer := coreinformers.NewFilteredPodInformer(target, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, func(o *metav1.ListOptions) {
			o.LabelSelector = sel.String()
		})
	nodeInformer := coreinformers.NewNodeInformer(target, 0, cache.Indexers{})
	p := &Provider{
		cfg: cfg, node: node, selector: sel,
		target: target, targetREST: targetREST, origin: origin, objects: objects,
		podInformer:  podInformer,
		pods:         corelisters.NewPodLister(podInformer.GetIndexer()),
		nodeInformer: nodeInformer,
		nodes:        corelisters.NewNodeLister(nodeInformer.GetIndexer()),
		namespaces:   map[string]bool{},
		owned:        map[string]*ownedPod{},
		byTarget:     map[string]*ownedPod{},
		now:          time.Now,
		podMetrics:   restPodMetrics(target.Discovery().RESTClient()),
		started:      time.Now(),
	}
	_, _ = p.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.emit(obj, false) },
		UpdateFunc: func(_, obj any) { p.emit(obj, false) },
		DeleteFunc: func(obj any) { p.emit(obj, true) },
	})
	return p
}

// Start runs the target informers and the token refresher until ctx
// ends; it is ready once the informers synced.
func (p *Provider) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("provider", Type, "virtualNode", p.node)
	p.loadRecords(ctx)
	go p.podInformer.RunWithContext(ctx)
	go p.nodeInformer.RunWithContext(ctx)
	if v, err := p.target.Discovery().ServerVersion(); err == nil {
		p.mu.Lock()
		p.version = v.GitVersion
		p.mu.Unlock()
	} else {
		log.Error(err, "Target cluster's version unknown")
	}
	if !cache.WaitForCacheSync(ctx.Done(), p.podInformer.HasSynced, p.nodeInformer.HasSynced) {
		return nil
	}
	log.Info("Target cluster's pods and nodes synced")
	p.MarkReady()
	t := time.NewTicker(tokenRefreshPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			p.RefreshTokens(ctx)
		}
	}
}

// NotifyPods registers the engine's callback (provider.PodNotifier).
func (p *Provider) NotifyPods(_ context.Context, notify func(*v1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
}

// KeepsObjectRefs: ConfigMaps and Secrets are copied, so env references
// stay references (provider.ObjectRefKeeper).
func (p *Provider) KeepsObjectRefs() bool { return true }

// loadRecords adopts the records of an earlier run (state directory).
func (p *Provider) loadRecords(ctx context.Context) {
	log := klog.FromContext(ctx)
	recs, errs := p.records.load()
	for _, err := range errs {
		log.Error(err, "Ignoring a record of the kubernetes provider's state directory", "dir", p.stateDir)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range recs {
		p.owned[o.key()] = o
		p.byTarget[o.targetKey()] = o
	}
	if len(recs) > 0 {
		log.Info("Adopting the target pods this provider created before", "pods", len(recs), "dir", p.stateDir)
	}
}

// recordOf returns the record a target pod belongs to: same namespace,
// name and UID as the pod the provider created (nil for any other pod,
// whatever its labels and annotations say).
func (p *Provider) recordOf(tp *v1.Pod) *ownedPod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recordOfLocked(tp)
}

func (p *Provider) recordOfLocked(tp *v1.Pod) *ownedPod {
	o := p.byTarget[tp.Namespace+"/"+tp.Name]
	if o == nil || o.TargetUID == "" || o.TargetUID != tp.UID {
		return nil
	}
	return o
}

// forget drops a record (its target pod is gone).
func (p *Provider) forget(ctx context.Context, o *ownedPod) {
	p.mu.Lock()
	if p.owned[o.key()] == o {
		delete(p.owned, o.key())
	}
	if p.byTarget[o.targetKey()] == o {
		delete(p.byTarget, o.targetKey())
	}
	p.mu.Unlock()
	if err := p.records.remove(o.OriginUID); err != nil {
		klog.FromContext(ctx).Error(err, "Removing a record of the kubernetes provider", "dir", p.stateDir, "podUID", o.OriginUID)
	}
}

func (p *Provider) emit(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	tp, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	o := p.recordOfLocked(tp)
	notify := p.notify
	var rec ownedPod
	if o != nil {
		rec = *o
	}
	p.mu.Unlock()
	if o == nil {
		// Not a pod this provider created (a forgery, another node's, an
		// earlier incarnation's): it says nothing about any origin pod.
		return
	}
	op := fromTarget(tp, &rec, p.node)
	if deleted {
		markGone(op)
		p.forget(context.Background(), o)
	}
	if notify != nil {
		notify(op)
	}
}

func (p *Provider) synced() error {
	if !p.podInformer.HasSynced() {
		return errdefs.Retryable(errors.New("the target cluster's pods are not synced yet"))
	}
	return nil
}

// targetPod finds this node's target pod for an origin pod: the pod the
// provider created for it (same namespace, name and UID), from the
// informer.
func (p *Provider) targetPod(namespace, name string) (*v1.Pod, *ownedPod, error) {
	if err := p.synced(); err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	o := p.owned[namespace+"/"+name]
	var rec ownedPod
	if o != nil {
		rec = *o
	}
	p.mu.Unlock()
	if o == nil || rec.TargetUID == "" {
		return nil, nil, provider.NotFound(namespace, name)
	}
	tp, err := p.pods.Pods(rec.TargetNamespace).Get(rec.OriginName)
	if apierrors.IsNotFound(err) {
		return nil, nil, provider.NotFound(namespace, name)
	}
	if err != nil {
		return nil, nil, errdefs.FromAPI(err)
	}
	if tp.UID != rec.TargetUID {
		return nil, nil, provider.NotFound(namespace, name)
	}
	return tp, &rec, nil
}

// GetPod returns the origin's view of the target pod, from the informer.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	tp, rec, err := p.targetPod(namespace, name)
	if err != nil {
		return nil, err
	}
	return fromTarget(tp, rec, p.node), nil
}

// GetPodStatus returns the target pod's status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error) {
	op, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &op.Status, nil
}

// ListPods returns the target pods this provider created, from the
// informer.
func (p *Provider) ListPods(context.Context) ([]*v1.Pod, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	recs := make([]ownedPod, 0, len(p.owned))
	for _, o := range p.owned {
		if o.TargetUID != "" {
			recs = append(recs, *o)
		}
	}
	p.mu.Unlock()
	out := make([]*v1.Pod, 0, len(recs))
	for i := range recs {
		tp, err := p.pods.Pods(recs[i].TargetNamespace).Get(recs[i].OriginName)
		if err != nil || tp.UID != recs[i].TargetUID {
			continue
		}
		out = append(out, fromTarget(tp, &recs[i], p.node))
	}
	return out, nil
}

// CreatePod makes the copies the pod needs, then the target pod, then
// gives the copies the pod as their owner, and records what it created
// (owned.go). Creating a pod that exists (same origin UID) completes what
// an earlier attempt left undone; a target pod of that name the provider
// did not create is never taken over, whatever its labels say.
func (p *Provider) CreatePod(ctx context.Context, pod *v1.Pod) error {
	if pod.UID == "" {
		return errdefs.Invalid(fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name))
	}
	ns, err := p.cfg.targetNamespace(pod.Namespace)
	if err != nil {
		return errdefs.Invalid(err)
	}
	if pod.Labels[LabelNode] != "" {
		return errdefs.Invalid(fmt.Errorf("pod %s/%s is itself a copy made by a virtual node (%s=%s); refusing to copy it again",
			pod.Namespace, pod.Name, LabelNode, pod.Labels[LabelNode]))
	}
	pl, err := toTarget(pod, p.node, ns)
	if err != nil {
		return err
	}
	o, err := p.startRecord(pod, ns)
	if err != nil {
		return err
	}
	if err := p.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	for _, c := range pl.copies {
		if err := p.ensureCopy(ctx, pod, ns, c, o); err != nil {
			return err
		}
	}
	tp, err := p.target.CoreV1().Pods(ns).Create(ctx, pl.pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		tp, err = p.target.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return errdefs.FromAPI(err)
		}
		p.mu.Lock()
		mine := o.TargetUID != "" && o.TargetUID == tp.UID
		p.mu.Unlock()
		if !mine {
			return errdefs.Retryable(fmt.Errorf("target namespace %s already has a pod %s that virtual node %s did not create "+
				"(its labels are not taken as proof of ownership); waiting for it to go", ns, pod.Name, p.node))
		}
	} else if apierrors.IsForbidden(err) {
		// Admission in the target refused it: often for a while only (a
		// new namespace's default service account not there yet, a quota
		// full). Retried, with the target's message on the pod.
		return fmt.Errorf("creating target pod %s/%s: %w", ns, pod.Name, errdefs.Retryable(err))
	} else if err != nil {
		return fmt.Errorf("creating target pod %s/%s: %w", ns, pod.Name, errdefs.FromAPI(err))
	}
	p.mu.Lock()
	o.TargetUID = tp.UID
	rec := *o
	rec.Tokens = append([]ownedToken(nil), o.Tokens...)
	p.mu.Unlock()
	if err := p.records.save(&rec); err != nil {
		return errdefs.Retryable(fmt.Errorf("recording target pod %s/%s in %s: %w", ns, pod.Name, p.stateDir, err))
	}
	if err := p.ownCopies(ctx, tp, pl.copies, &rec); err != nil {
		return err
	}
	// The informer may have seen the pod before it was recorded.
	if cached, err := p.pods.Pods(ns).Get(pod.Name); err == nil && cached.UID == tp.UID {
		p.emit(cached, false)
	}
	return nil
}

// startRecord returns the record of pod, making it when there is none:
// the origin pod as the engine gave it, and its target namespace. The
// record of an earlier pod of the same name is replaced only once its
// target pod was never created (the engine deletes the old one first).
func (p *Provider) startRecord(pod *v1.Pod, ns string) (*ownedPod, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := pod.Namespace + "/" + pod.Name
	p.mu.Lock()
	defer p.mu.Unlock()
	o := p.owned[key]
	if o != nil && o.OriginUID == pod.UID {
		return o, nil
	}
	if o != nil && o.TargetUID != "" {
		return nil, errdefs.Retryable(fmt.Errorf("target pod %s/%s still belongs to an earlier pod of that name (%s)", o.TargetNamespace, o.OriginName, o.OriginUID))
	}
	n := &ownedPod{OriginNamespace: pod.Namespace, OriginName: pod.Name, OriginUID: pod.UID, ServiceAccount: sa, TargetNamespace: ns}
	if other := p.byTarget[n.targetKey()]; other != nil && other != o && other.key() != key {
		return nil, errdefs.Retryable(fmt.Errorf("target pod %s/%s is taken by origin pod %s (two origin namespaces map to %s)", ns, pod.Name, other.key(), ns))
	}
	if o != nil && p.byTarget[o.targetKey()] == o {
		delete(p.byTarget, o.targetKey())
	}
	p.owned[key] = n
	p.byTarget[n.targetKey()] = n
	return n, nil
}

// UpdatePod applies what a pod may change in place: labels, annotations,
// container images and the active deadline. (Tolerations are left alone:
// the target's admission added its own, which may not be removed.)
func (p *Provider) UpdatePod(ctx context.Context, pod *v1.Pod) error {
	tp, rec, err := p.targetPod(pod.Namespace, pod.Name)
	if err != nil {
		return err
	}
	if rec.OriginUID != pod.UID {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	pl, err := toTarget(pod, p.node, tp.Namespace)
	if err != nil {
		return err
	}
	upd := tp.DeepCopy()
	upd.Labels, upd.Annotations = pl.pod.Labels, pl.pod.Annotations
	upd.Spec.ActiveDeadlineSeconds = pl.pod.Spec.ActiveDeadlineSeconds
	for i := range upd.Spec.Containers {
		if c := podspec.FindIn(pl.pod.Spec.Containers, upd.Spec.Containers[i].Name); c != nil {
			upd.Spec.Containers[i].Image = c.Image
		}
	}
	for i := range upd.Spec.InitContainers {
		if c := podspec.FindIn(pl.pod.Spec.InitContainers, upd.Spec.InitContainers[i].Name); c != nil {
			upd.Spec.InitContainers[i].Image = c.Image
		}
	}
	if _, err := p.target.CoreV1().Pods(tp.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating target pod %s/%s: %w", tp.Namespace, tp.Name, errdefs.FromAPI(err))
	}
	return nil
}

// DeletePod deletes the target pod the provider created for the pod, with
// the origin pod's grace period and a precondition on the UID it recorded
// (its copies go with it).
func (p *Provider) DeletePod(ctx context.Context, pod *v1.Pod) error {
	if err := p.synced(); err != nil {
		return err
	}
	p.mu.Lock()
	o := p.owned[pod.Namespace+"/"+pod.Name]
	var rec ownedPod
	if o != nil {
		rec = *o
	}
	p.mu.Unlock()
	if o == nil || (pod.UID != "" && rec.OriginUID != pod.UID) {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	if rec.TargetUID == "" {
		// Never created: nothing runs (token copies without an owner are
		// deleted by UID).
		for _, t := range rec.Tokens {
			uid := t.SecretUID
			_ = p.target.CoreV1().Secrets(rec.TargetNamespace).Delete(ctx, t.Secret, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		}
		p.forget(ctx, o)
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	uid := rec.TargetUID
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if pod.DeletionGracePeriodSeconds != nil {
		g := *pod.DeletionGracePeriodSeconds
		opts.GracePeriodSeconds = &g
	}
	err := p.target.CoreV1().Pods(rec.TargetNamespace).Delete(ctx, rec.OriginName, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone (a pod under that name now is not the one created).
		p.forget(ctx, o)
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	if err != nil {
		return fmt.Errorf("deleting target pod %s/%s: %w", rec.TargetNamespace, rec.OriginName, errdefs.FromAPI(err))
	}
	return nil
}

// ensureNamespace creates the target namespace when missing (and allowed).
func (p *Provider) ensureNamespace(ctx context.Context, ns string) error {
	p.mu.Lock()
	known := p.namespaces[ns]
	p.mu.Unlock()
	if known {
		return nil
	}
	_, err := p.target.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if !p.cfg.createNamespaces() {
			return errdefs.Retryable(fmt.Errorf("target namespace %s does not exist (createNamespaces is false)", ns))
		}
		_, err = p.target.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{LabelManaged: "gokubelet-virtual-nodes"}}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("target namespace %s: %w", ns, errdefs.FromAPI(err))
	}
	p.mu.Lock()
	p.namespaces[ns] = true
	p.mu.Unlock()
	return nil
}

var (
	_ provider.Provider            = (*Provider)(nil)
	_ provider.PodNotifier         = (*Provider)(nil)
	_ provider.ObjectRefKeeper     = (*Provider)(nil)
	_ provider.LogsProvider        = (*Provider)(nil)
	_ provider.ExecProvider        = (*Provider)(nil)
	_ provider.AttachProvider      = (*Provider)(nil)
	_ provider.PortForwardProvider = (*Provider)(nil)
	_ provider.StatsProvider       = (*Provider)(nil)
	_ runnable.Runnable            = (*Provider)(nil)
	_ runnable.Readier             = (*Provider)(nil)
)
