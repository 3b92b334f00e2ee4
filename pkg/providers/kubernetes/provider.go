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
// Ownership: every object it creates carries gokubelet.io/virtual-node=
// <node> (and the origin pod's UID); it lists, updates and deletes only
// objects with that label, refuses to take over a same-named object
// without it, and never deletes namespaces. Tolerations of the virtual
// node taint are not copied, so a copy never lands on a virtual node.
//
// Status: an informer on the target's pods (selected by the label) keeps
// GetPod, GetPodStatus and ListPods in memory and pushes every change to
// the engine (provider.PodNotifier): phase, conditions, container states
// and pod IPs, mirrored as the origin's pod. Capacity is the sum of the
// allocatable of the target's Ready, schedulable nodes that a copy can
// land on (no virtual node taint). Logs, exec, attach and port-forward
// are proxied to the target's API server.
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
	"k8s.io/client-go/informers"
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

	mu      sync.Mutex
	notify  func(*v1.Pod)
	version string
	// namespaces known to exist in the target.
	namespaces map[string]bool
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
	return NewForClients(ic.NodeName, cfg, target, rc, ic.Client, ic.Objects), nil
}

// NewForClients builds the provider from clients (tests).
func NewForClients(node string, cfg Config, target kubernetes.Interface, targetREST *rest.Config, origin kubernetes.Interface, objects provider.ObjectGetter) *Provider {
	sel := labels.SelectorFromSet(labels.Set{LabelNode: nodeLabelValue(node)})
	pf := informers.NewSharedInformerFactoryWithOptions(target, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = sel.String()
	}))
	nf := informers.NewSharedInformerFactory(target, 0)
	p := &Provider{
		cfg: cfg, node: node, selector: sel,
		target: target, targetREST: targetREST, origin: origin, objects: objects,
		podInformer:  pf.Core().V1().Pods().Informer(),
		pods:         pf.Core().V1().Pods().Lister(),
		nodeInformer: nf.Core().V1().Nodes().Informer(),
		nodes:        nf.Core().V1().Nodes().Lister(),
		namespaces:   map[string]bool{},
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
			p.refreshTokens(ctx)
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

func (p *Provider) emit(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	tp, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	op, ok := fromTarget(tp, p.node)
	if !ok {
		return
	}
	if deleted {
		markGone(op)
	}
	p.mu.Lock()
	notify := p.notify
	p.mu.Unlock()
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

// targetPod finds this node's target pod for an origin pod.
func (p *Provider) targetPod(namespace, name string) (*v1.Pod, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	ns, err := p.cfg.targetNamespace(namespace)
	if err != nil {
		return nil, provider.NotFound(namespace, name)
	}
	tp, err := p.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, provider.NotFound(namespace, name)
	}
	if err != nil {
		return nil, errdefs.FromAPI(err)
	}
	if tp.Labels[LabelNode] != nodeLabelValue(p.node) || tp.Annotations[AnnotationOriginNamespace] != namespace {
		return nil, provider.NotFound(namespace, name)
	}
	return tp, nil
}

// GetPod returns the origin's view of the target pod, from the informer.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	tp, err := p.targetPod(namespace, name)
	if err != nil {
		return nil, err
	}
	op, _ := fromTarget(tp, p.node)
	return op, nil
}

// GetPodStatus returns the target pod's status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error) {
	op, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &op.Status, nil
}

// ListPods returns this node's target pods, from the informer.
func (p *Provider) ListPods(context.Context) ([]*v1.Pod, error) {
	if err := p.synced(); err != nil {
		return nil, err
	}
	tps, err := p.pods.List(p.selector)
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Pod, 0, len(tps))
	for _, tp := range tps {
		if op, ok := fromTarget(tp, p.node); ok {
			out = append(out, op)
		}
	}
	return out, nil
}

// CreatePod makes the copies the pod needs, then the target pod, then
// gives the copies the pod as their owner. Creating a pod that exists
// (same origin UID) completes what an earlier attempt left undone.
func (p *Provider) CreatePod(ctx context.Context, pod *v1.Pod) error {
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
	if err := p.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	for _, c := range pl.copies {
		if err := p.ensureCopy(ctx, pod, ns, c); err != nil {
			return err
		}
	}
	tp, err := p.target.CoreV1().Pods(ns).Create(ctx, pl.pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		tp, err = p.target.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return errdefs.FromAPI(err)
		}
		if tp.Labels[LabelNode] != nodeLabelValue(p.node) {
			return errdefs.Terminal(fmt.Errorf("target namespace %s already has a pod %s that virtual node %s does not manage", ns, pod.Name, p.node))
		}
		if tp.Labels[LabelOriginUID] != string(pod.UID) {
			return errdefs.Retryable(fmt.Errorf("target pod %s/%s still belongs to an earlier pod of that name (%s)", ns, pod.Name, tp.Labels[LabelOriginUID]))
		}
	} else if apierrors.IsForbidden(err) {
		// Admission in the target refused it: often for a while only (a
		// new namespace's default service account not there yet, a quota
		// full). Retried, with the target's message on the pod.
		return fmt.Errorf("creating target pod %s/%s: %w", ns, pod.Name, errdefs.Retryable(err))
	} else if err != nil {
		return fmt.Errorf("creating target pod %s/%s: %w", ns, pod.Name, errdefs.FromAPI(err))
	}
	return p.ownCopies(ctx, tp, pl.copies)
}

// UpdatePod applies what a pod may change in place: labels, annotations,
// container images and the active deadline. (Tolerations are left alone:
// the target's admission added its own, which may not be removed.)
func (p *Provider) UpdatePod(ctx context.Context, pod *v1.Pod) error {
	tp, err := p.targetPod(pod.Namespace, pod.Name)
	if err != nil {
		return err
	}
	if tp.Labels[LabelOriginUID] != string(pod.UID) {
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

// DeletePod deletes the target pod with the origin pod's grace period and
// a UID precondition (its copies go with it).
func (p *Provider) DeletePod(ctx context.Context, pod *v1.Pod) error {
	tp, err := p.targetPod(pod.Namespace, pod.Name)
	if err != nil {
		return err
	}
	if pod.UID != "" && tp.Labels[LabelOriginUID] != string(pod.UID) {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	uid := tp.UID
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if pod.DeletionGracePeriodSeconds != nil {
		g := *pod.DeletionGracePeriodSeconds
		opts.GracePeriodSeconds = &g
	}
	err = p.target.CoreV1().Pods(tp.Namespace).Delete(ctx, tp.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	if err != nil {
		return fmt.Errorf("deleting target pod %s/%s: %w", tp.Namespace, tp.Name, errdefs.FromAPI(err))
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
	_ runnable.Runnable            = (*Provider)(nil)
	_ runnable.Readier             = (*Provider)(nil)
)
