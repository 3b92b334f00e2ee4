package podcerts

import (
	"context"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

const (
	// sweepInterval is how often every source is looked at without being
	// asked: refreshes fall due, failed creates are retried, lost
	// requests are abandoned. Upstream's refresh pass runs every minute.
	sweepInterval = time.Minute
	// callTimeout bounds each API call of a pass, so that one hung call
	// does not hold up every other pod's certificates.
	callTimeout = 30 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Client is the node's API client. Without one (standalone) every
	// CredentialBundle call fails with ErrStandalone.
	Client   kubernetes.Interface
	NodeName string
	// NodeUID returns the Node object's UID, "" until the node is
	// registered; requests need it (NodeRestriction checks it).
	NodeUID func() types.UID
	// Clock times refreshes and retries; defaults to the real clock.
	Clock clock.WithTicker
	// OnChange is called, from a goroutine of the manager and never with
	// a lock held, when a pod's credential changed (first issued or
	// refreshed), so that its volumes are rewritten. Optional.
	OnChange func(podUID types.UID)
}

// Manager obtains and refreshes the credentials of podCertificate sources.
// Create it with New, run it with Start, ask it with CredentialBundle and
// tell it with ForgetPod when a pod is gone: it keeps one entry per
// (pod UID, volume, source index) it was asked for, until then.
type Manager struct {
	client   kubernetes.Interface
	nodeName types.NodeName
	nodeUID  func() types.UID
	clock    clock.WithTicker
	onChange func(types.UID)
	// jitter returns a random duration in [0, max); tests fix it.
	jitter func(max time.Duration) time.Duration

	kick chan struct{}
	// needed is closed by the first CredentialBundle call: a node none of
	// whose pods projects a certificate never watches requests.
	needed     chan struct{}
	neededOnce sync.Once

	mu      sync.Mutex
	entries map[entryKey]*entry
	// byUID maps the UID of each request in flight to its entry: the only
	// way a watched request reaches an entry.
	byUID map[types.UID]entryKey
	// store is the watch cache of the node's requests, set by Start.
	store cache.Store
}

// New returns a Manager; it does nothing until Start.
func New(opts Options) *Manager {
	m := &Manager{
		client:   opts.Client,
		nodeName: types.NodeName(opts.NodeName),
		nodeUID:  opts.NodeUID,
		clock:    opts.Clock,
		onChange: opts.OnChange,
		jitter:   func(max time.Duration) time.Duration { return time.Duration(mathrand.Int64N(int64(max))) },
		kick:     make(chan struct{}, 1),
		needed:   make(chan struct{}),
		entries:  map[entryKey]*entry{},
		byUID:    map[types.UID]entryKey{},
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.nodeUID == nil {
		m.nodeUID = func() types.UID { return "" }
	}
	if m.onChange == nil {
		m.onChange = func(types.UID) {}
	}
	return m
}

// Start watches the node's PodCertificateRequests and creates requests as
// sources need them, until ctx ends; it then returns nil. The watch starts
// when the first source is asked for.
//
// The watch is a list/watch with the field selector spec.nodeName=<node>:
// the only one the Node authorizer lets a node make. Requests are made
// without waiting for the watch to sync, and there is deliberately no
// readiness signal: against an API server that does not serve
// PodCertificateRequests the watch never syncs, and that must neither hold
// up the kubelet's start nor hide the create error that says why.
func (m *Manager) Start(ctx context.Context) error {
	if m.client == nil {
		<-ctx.Done()
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-m.needed:
	}
	logger := klog.FromContext(ctx).WithName("podcerts")
	ctx = klog.NewContext(ctx, logger)

	ticker := m.clock.NewTicker(sweepInterval)
	defer ticker.Stop()

	selector := fields.OneTermEqualSelector("spec.nodeName", string(m.nodeName)).String()
	inf := certinformers.NewFilteredPodCertificateRequestInformer(m.client, metav1.NamespaceAll, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(logger, obj) },
		UpdateFunc: func(_, obj any) { m.observe(logger, obj) },
		DeleteFunc: func(obj any) { m.deleted(logger, obj) },
	}); err != nil {
		return fmt.Errorf("watching PodCertificateRequests: %w", err)
	}
	m.mu.Lock()
	m.store = inf.GetStore()
	m.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	defer wg.Wait()
	logger.V(2).Info("Watching PodCertificateRequests", "fieldSelector", selector)

	for {
		m.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-m.kick:
		case <-ticker.C():
		}
	}
}

// CredentialBundle returns the PEM private key and certificate chain of
// source sourceIndex (src) of the projected volume volumeName of pod.
//
// It never waits for the API: the first call for a source only records it
// and wakes the worker, and until a certificate is issued the error wraps
// ErrNotIssued (the volume is retried and the pod waits, as upstream).
// Once a request is denied or failed, the error names the condition's
// reason and message. Callers must call ForgetPod when the pod is gone.
func (m *Manager) CredentialBundle(ctx context.Context, pod *v1.Pod, volumeName string, sourceIndex int, src *v1.PodCertificateProjection) (privateKeyPEM, certChainPEM []byte, err error) {
	switch {
	case m.client == nil:
		return nil, nil, ErrStandalone
	case pod == nil || src == nil:
		return nil, nil, errors.New("podCertificate: no pod or no source")
	case podspec.IsStatic(pod) || podspec.IsMirror(pod):
		// NodeRestriction refuses requests for mirror pods, and a static
		// pod has no API object of its own UID to request for.
		return nil, nil, fmt.Errorf("pod %s: podCertificate projections are not available to static pods", podspec.Format(pod))
	case pod.Spec.ServiceAccountName == "":
		return nil, nil, fmt.Errorf("pod %s: podCertificate projections need the pod's service account, and it names none", podspec.Format(pod))
	}
	if _, ok := keyGenerators[src.KeyType]; !ok {
		return nil, nil, fmt.Errorf("pod %s volume %q source %d: unsupported key type %q (supported: %v)", podspec.Format(pod), volumeName, sourceIndex, src.KeyType, KeyTypes())
	}

	m.neededOnce.Do(func() { close(m.needed) })
	k := entryKey{pod: pod.UID, volume: volumeName, source: sourceIndex}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[k]
	if e == nil {
		e = &entry{
			pod: podRef{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, serviceAccount: pod.Spec.ServiceAccountName},
			src: *src.DeepCopy(),
		}
		m.entries[k] = e
	}
	if next(e, m.clock.Now(), true) == request {
		m.wake()
	}
	return e.bundle(k)
}

// ForgetPod drops every source of the pod. A request still in flight is
// left to the garbage collector (it is owned by the pod); its answer is
// ignored.
func (m *Manager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.entries {
		if k.pod != uid {
			continue
		}
		if e.inflight != nil {
			delete(m.byUID, e.inflight.uid)
		}
		delete(m.entries, k)
	}
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// work is an entry a pass creates a request for.
type work struct {
	key entryKey
	e   *entry
}

// sweep is one pass over every source: it settles requests the watch
// cache has answered, abandons lost ones, and creates the requests that
// are due (outside the lock: creating one takes API calls and, for RSA,
// a noticeable key generation).
func (m *Manager) sweep(ctx context.Context) {
	now := m.clock.Now()
	var todo []work
	var changed []types.UID
	m.mu.Lock()
	for k, e := range m.entries {
		seen := false
		if e.inflight != nil {
			var pcr *certificatesv1.PodCertificateRequest
			pcr, seen = m.cachedLocked(e)
			if seen && m.settleLocked(k, e, pcr) {
				changed = append(changed, k.pod)
			}
		}
		switch next(e, now, seen) {
		case abandon:
			klog.FromContext(ctx).Info("PodCertificateRequest has not been seen for too long; requesting again", "source", k, "request", e.pod.namespace+"/"+e.inflight.name)
			delete(m.byUID, e.inflight.uid)
			e.inflight = nil
			if next(e, now, false) == request {
				e.creating = true
				todo = append(todo, work{k, e})
			}
		case request:
			e.creating = true
			todo = append(todo, work{k, e})
		}
	}
	m.mu.Unlock()
	m.notify(changed)

	for _, w := range todo {
		m.request(ctx, w.key, w.e)
	}
}

// request creates a request for an entry and records it, unless the pod
// was forgotten meanwhile.
func (m *Manager) request(ctx context.Context, k entryKey, e *entry) {
	logger := klog.FromContext(ctx)
	// pod and src never change once the entry exists.
	req, err := m.create(ctx, e.pod, &e.src)
	m.mu.Lock()
	if m.entries[k] != e {
		m.mu.Unlock()
		return
	}
	e.created(req, err, m.clock.Now())
	changed := false
	if err != nil {
		logger.Info("Could not request a pod certificate; will retry", "source", k, "err", err, "retryAt", e.retryAt)
	} else {
		logger.V(2).Info("Requested a pod certificate", "source", k, "request", e.pod.namespace+"/"+req.name, "signer", e.src.SignerName)
		m.byUID[req.uid] = k
		// The watch may have delivered the request (even answered) before
		// its UID was known here; look at the cache once now.
		if pcr, ok := m.cachedLocked(e); ok {
			changed = m.settleLocked(k, e, pcr)
		}
	}
	m.mu.Unlock()
	if changed {
		m.notify([]types.UID{k.pod})
	}
}

// create makes the key and the request for a source. The service account's
// UID is read on every request, as upstream does: NodeRestriction compares
// it with the live object, so a recreated account must not be answered
// with a stale UID.
func (m *Manager) create(ctx context.Context, pod podRef, src *v1.PodCertificateProjection) (*inflight, error) {
	nodeUID := m.nodeUID()
	if nodeUID == "" {
		return nil, errors.New("the Node's UID is not known yet (node not registered)")
	}
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	sa, err := m.client.CoreV1().ServiceAccounts(pod.namespace).Get(callCtx, pod.serviceAccount, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading service account %s/%s: %w", pod.namespace, pod.serviceAccount, err)
	}
	keyPEM, stubCSR, err := newKey(src.KeyType)
	if err != nil {
		return nil, err
	}
	pcr := requestFor(pod, src, sa.UID, m.nodeName, nodeUID, stubCSR)
	callCtx, cancel = context.WithTimeout(ctx, callTimeout)
	defer cancel()
	got, err := m.client.CertificatesV1().PodCertificateRequests(pod.namespace).Create(callCtx, pcr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a PodCertificateRequest: %w", err)
	}
	if got.UID == "" || got.Name == "" {
		return nil, errors.New("creating a PodCertificateRequest: the API server returned no name or UID")
	}
	return &inflight{
		name:      got.Name,
		uid:       got.UID,
		keyPEM:    keyPEM,
		abandonAt: m.clock.Now().Add(abandonAfter + m.jitter(maxJitter)),
	}, nil
}

// cachedLocked returns e's request in flight from the watch cache, if it is
// there under the UID this manager was given.
func (m *Manager) cachedLocked(e *entry) (*certificatesv1.PodCertificateRequest, bool) {
	if m.store == nil || e.inflight == nil {
		return nil, false
	}
	obj, ok, err := m.store.GetByKey(e.pod.namespace + "/" + e.inflight.name)
	if err != nil || !ok {
		return nil, false
	}
	pcr, ok := obj.(*certificatesv1.PodCertificateRequest)
	if !ok || pcr.UID != e.inflight.uid {
		return nil, false
	}
	return pcr, true
}

// settleLocked applies pcr, e's request in flight, and reports whether the
// credential changed.
func (m *Manager) settleLocked(k entryKey, e *entry, pcr *certificatesv1.PodCertificateRequest) bool {
	o := readStatus(&pcr.Status)
	if o.verdict == pending {
		return false
	}
	delete(m.byUID, pcr.UID)
	return e.settle(o, m.jitter(maxJitter))
}

// inflightLocked returns the source whose request in flight pcr is: one
// this manager created (by the UID the API server gave it) and still waits
// for. Any other request, whoever made it, is none of its business.
func (m *Manager) inflightLocked(pcr *certificatesv1.PodCertificateRequest) (entryKey, *entry, bool) {
	k, ok := m.byUID[pcr.UID]
	e := m.entries[k]
	if !ok || e == nil || e.inflight == nil || e.inflight.uid != pcr.UID {
		return entryKey{}, nil, false
	}
	return k, e, true
}

// observe handles a watched request: only one this manager created and
// still waits for is acted on.
func (m *Manager) observe(logger klog.Logger, obj any) {
	pcr, ok := obj.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return
	}
	m.mu.Lock()
	k, e, ok := m.inflightLocked(pcr)
	if !ok {
		m.mu.Unlock()
		return
	}
	changed := m.settleLocked(k, e, pcr)
	final, refreshAt := e.final, e.refreshAt
	m.mu.Unlock()
	if final != nil {
		logger.Info("Pod certificate refused", "source", k, "err", final)
	}
	if changed {
		logger.V(2).Info("Pod certificate issued", "source", k, "request", pcr.Namespace+"/"+pcr.Name, "refreshAt", refreshAt)
		m.notify([]types.UID{k.pod})
	}
}

// deleted handles a watched request's deletion: if it was one in flight,
// it is requested again at once.
func (m *Manager) deleted(logger klog.Logger, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pcr, ok := obj.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return
	}
	m.mu.Lock()
	k, e, ok := m.inflightLocked(pcr)
	if !ok {
		m.mu.Unlock()
		return
	}
	// An answer the watch delivered only with the deletion still counts.
	if m.settleLocked(k, e, pcr) {
		m.mu.Unlock()
		m.notify([]types.UID{k.pod})
		return
	}
	if e.inflight == nil {
		m.mu.Unlock()
		return
	}
	delete(m.byUID, pcr.UID)
	e.inflight = nil
	m.mu.Unlock()
	logger.Info("PodCertificateRequest deleted before it was answered; requesting again", "source", k, "request", pcr.Namespace+"/"+pcr.Name)
	m.wake()
}

func (m *Manager) notify(pods []types.UID) {
	for _, uid := range pods {
		m.onChange(uid)
	}
}
