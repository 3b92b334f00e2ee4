// Package dra is the node's side of dynamic resource allocation (DRA,
// resource.k8s.io/v1), at the 1.37 kubelet plugin API
// (k8s.io/kubelet/pkg/apis/dra/v1):
//
//   - DRA drivers register through the plugins_registry
//     (pkg/plugins/registration) as type DRAPlugin, serving v1.DRAPlugin;
//   - before a pod's sandbox is created, each of its ResourceClaims must be
//     allocated and reserved for the pod; the claims are prepared with
//     NodePrepareResources, one call per driver, and the CDI devices the
//     drivers return go to the containers that use the claims (CRI CDI
//     devices, which containerd resolves from the drivers' CDI specs);
//   - NodeUnprepareResources runs once the last pod on the node that uses
//     a claim has stopped;
//   - claim state is checkpointed in upstream's dra_manager_state under the
//     root directory, so a restarted kubelet, or an upstream one taking the
//     node back, unprepares what was prepared;
//   - the ResourceSlices of a driver that is not usable are deleted after
//     upstream's wiping delay (30 s) unless it becomes usable again: a
//     driver is usable while it is registered and its gRPC connection is
//     up, so one that registers but never serves, or whose service goes
//     away without unregistering, loses its slices too;
//   - the pod-resources API reads the prepared devices.
//
// state.go holds the pure part.
package dra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcstats "google.golang.org/grpc/stats"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// PluginType is the plugins_registry type of DRA drivers.
const PluginType = "DRAPlugin"

// DefaultWipingDelay is how long the ResourceSlices of a driver that is
// not usable stay (upstream's).
const DefaultWipingDelay = 30 * time.Second

// EventFailedPrepare is the pod event of a failed preparation (upstream's
// reason).
const EventFailedPrepare = "FailedPrepareDynamicResources"

// callTimeout bounds a driver call (upstream's default plugin client
// timeout); a variable for tests.
var callTimeout = 45 * time.Second

// reconcilePeriod is how often claims of pods that are gone are
// unprepared even without a pod's termination (a pod deleted while the
// kubelet was down).
const reconcilePeriod = time.Minute

// Options configure a Manager.
type Options struct {
	// RootDir holds the checkpoint.
	RootDir string
	// NodeName is the node whose ResourceSlices a gone driver leaves.
	NodeName string
	// Client acts as the node: it reads claims and deletes ResourceSlices.
	// Nil (standalone) makes pods with claims wait with a reason.
	Client kubernetes.Interface
	// ActivePods are the node's pods that have not finished; SourcesReady
	// tells that every pod source has been seen.
	ActivePods   func() []*v1.Pod
	SourcesReady func() bool
	// WipingDelay defaults to DefaultWipingDelay.
	WipingDelay time.Duration
	// PodsChanged is told the pods whose devices' health changed, so
	// their status is computed again.
	PodsChanged func(uids []types.UID)
	// HealthMessages puts the drivers' health messages in the status
	// (ResourceHealthStatusMessage).
	HealthMessages bool
}

// Manager is the DRA manager. Run it with Start.
type Manager struct {
	opts Options

	mu      sync.Mutex
	drivers map[string]*driver
	wipes   map[string]*time.Timer
	claims  map[string]*claim
	// health is the last reported health, by driver and pool/device.
	health map[string]map[string]deviceHealth
	ctx    context.Context

	// opMu serialises prepare and unprepare, which call drivers outside
	// mu.
	opMu sync.Mutex
	// ready is closed once the checkpoint is restored.
	ready chan struct{}
}

// driver is a registered DRA driver.
type driver struct {
	name, endpoint string
	conn           *grpc.ClientConn
	client         drapb.DRAPluginClient
	// healthService is the health API the driver serves that the kubelet
	// watches ("" when none; see pickHealthService).
	healthService string
	// stop ends its health stream.
	stop context.CancelFunc
	// connected: a transport to the driver is up (guarded by the
	// manager's mu).
	connected bool
}

// connWatch follows the transports of one driver's connection (gRPC
// calls HandleConn as each begins and ends) and keeps the connection
// trying: gRPC does not reconnect an idle connection by itself, and a
// driver that restarts would go unnoticed until the next call.
type connWatch struct {
	m *Manager
	d *driver
}

func (w *connWatch) TagRPC(ctx context.Context, _ *grpcstats.RPCTagInfo) context.Context { return ctx }
func (w *connWatch) HandleRPC(context.Context, grpcstats.RPCStats)                       {}
func (w *connWatch) TagConn(ctx context.Context, _ *grpcstats.ConnTagInfo) context.Context {
	return ctx
}

func (w *connWatch) HandleConn(_ context.Context, st grpcstats.ConnStats) {
	var up bool
	switch st.(type) {
	case *grpcstats.ConnBegin:
		up = true
	case *grpcstats.ConnEnd:
		// Not from inside the handler: gRPC may hold a lock Connect takes.
		go w.d.conn.Connect()
	default:
		return
	}
	log := w.m.logger()
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.d.connected == up {
		return
	}
	w.d.connected = up
	log.V(2).Info("DRA driver connection changed", "driver", w.d.name, "endpoint", w.d.endpoint, "connected", up)
	w.m.syncWipe(w.d.name)
}

func (d *driver) close() {
	if d.stop != nil {
		d.stop()
	}
	_ = d.conn.Close()
}

// New builds a manager and restores its checkpoint.
func New(o Options) *Manager {
	if o.WipingDelay <= 0 {
		o.WipingDelay = DefaultWipingDelay
	}
	return &Manager{opts: o, drivers: map[string]*driver{}, wipes: map[string]*time.Timer{}, claims: map[string]*claim{}, health: map[string]map[string]deviceHealth{}, ctx: context.Background(), ready: make(chan struct{})}
}

func (m *Manager) statePath() string { return filepath.Join(m.opts.RootDir, StateFile) }

// Start restores the checkpoint and unprepares, now and then, the claims
// of pods that are gone, until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	m.restore(m.logger())
	close(m.ready)
	// As upstream at start: the node's ResourceSlices are deleted, so
	// none of a driver that is gone for good stays; the drivers that run
	// publish theirs again.
	go m.wipe("")
	t := time.NewTicker(reconcilePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.mu.Lock()
			drivers := make([]*driver, 0, len(m.drivers))
			for _, d := range m.drivers {
				drivers = append(drivers, d)
			}
			for _, w := range m.wipes {
				w.Stop()
			}
			m.mu.Unlock()
			// Outside mu: closing a connection ends its transport, and
			// the connection's watch takes mu.
			for _, d := range drivers {
				d.close()
			}
			return nil
		case <-t.C:
			m.reconcile(ctx)
		}
	}
}

// Ready is closed once the prepared claims are restored (the group starts
// the engine after).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

func (m *Manager) restore(log klog.Logger) {
	b, err := os.ReadFile(m.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var list []claimState
	if err == nil {
		list, err = decodeState(b)
	}
	if err != nil {
		log.Error(err, "Prepared ResourceClaims are not restored: the DRA checkpoint cannot be read", "path", m.statePath())
		return
	}
	m.mu.Lock()
	for _, s := range list {
		if s.PodUIDs == nil {
			s.PodUIDs = sets.New[string]()
		}
		m.claims[claimKey(s.Namespace, s.ClaimName)] = &claim{claimState: s}
	}
	m.mu.Unlock()
	log.Info("Prepared ResourceClaims restored from the DRA checkpoint", "claims", len(list))
}

func (m *Manager) logger() klog.Logger { return klog.FromContext(m.context()) }

func (m *Manager) context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx
}

// ---- registration (registration.Handler) ----------------------------------

// ValidatePlugin checks a DRA driver's name and that it serves the v1
// kubelet plugin API.
func (m *Manager) ValidatePlugin(name, endpoint string, versions []string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("invalid DRA driver name %q: %s", name, strings.Join(errs, "; "))
	}
	for _, v := range versions {
		if v == drapb.DRAPluginService {
			return nil
		}
	}
	return fmt.Errorf("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: none of services supported by the plugin (%q) are supported by the kubelet (%q)", name, endpoint, versions, []string{drapb.DRAPluginService})
}

// RegisterPlugin adds a driver (replacing an earlier registration of the
// same name). It becomes usable once its connection is up.
func (m *Manager) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	d := &driver{name: name, endpoint: endpoint, healthService: pickHealthService(versions)}
	var hctx context.Context
	if d.healthService != "" {
		hctx, d.stop = context.WithCancel(m.context())
	}
	conn, err := grpc.NewClient("passthrough:///"+endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", endpoint)
		}),
		grpc.WithStatsHandler(&connWatch{m: m, d: d}))
	if err != nil {
		if d.stop != nil {
			d.stop()
		}
		return fmt.Errorf("DRA driver %s at %s: %w", name, endpoint, err)
	}
	d.conn, d.client = conn, drapb.NewDRAPluginClient(conn)
	m.mu.Lock()
	old := m.drivers[name]
	m.drivers[name] = d
	m.syncWipe(name)
	m.mu.Unlock()
	if old != nil {
		old.close()
	}
	// Connect now, not at the first call: a driver that registers but
	// does not serve is noticed (and its slices wiped) without one.
	conn.Connect()
	if hctx != nil {
		go m.watchHealth(hctx, d)
	}
	klog.FromContext(ctx).Info("DRA driver registered", "driver", name, "endpoint", endpoint)
	return nil
}

// DeRegisterPlugin forgets a driver whose socket is gone; its
// ResourceSlices on this node are deleted after the wiping delay unless it
// comes back.
func (m *Manager) DeRegisterPlugin(ctx context.Context, name, endpoint string) {
	m.mu.Lock()
	d := m.drivers[name]
	if d == nil || d.endpoint != endpoint {
		m.mu.Unlock()
		return
	}
	delete(m.drivers, name)
	m.syncWipe(name)
	m.mu.Unlock()
	d.close()
	klog.FromContext(ctx).Info("DRA driver gone; its ResourceSlices on this node are deleted unless it registers again", "driver", name, "delay", m.opts.WipingDelay)
}

// usable: the driver is registered and its connection is up. mu held.
func (m *Manager) usable(name string) bool {
	d := m.drivers[name]
	return d != nil && d.connected
}

// syncWipe follows a change of a driver's registration or connection, as
// upstream: a usable driver's pending wipe is cancelled; one that is not
// usable gets a wipe after the wiping delay, counted from when it first
// stopped being usable (a pending wipe keeps its time). mu held.
func (m *Manager) syncWipe(name string) {
	if m.usable(name) {
		if w := m.wipes[name]; w != nil {
			w.Stop()
			delete(m.wipes, name)
		}
		return
	}
	if m.wipes[name] == nil {
		m.wipes[name] = time.AfterFunc(m.opts.WipingDelay, func() { m.wipe(name) })
	}
}

// wipe deletes the node's ResourceSlices of a driver that did not come
// back ("": of every driver).
func (m *Manager) wipe(name string) {
	m.mu.Lock()
	back := name != "" && m.usable(name)
	if name != "" {
		delete(m.wipes, name)
	}
	m.mu.Unlock()
	if back || m.opts.Client == nil {
		return
	}
	ctx := m.context()
	log := klog.FromContext(ctx).WithValues("driver", name)
	set := fields.Set{resourceapi.ResourceSliceSelectorNodeName: m.opts.NodeName}
	if name != "" {
		set[resourceapi.ResourceSliceSelectorDriver] = name
	}
	sel := set.String()
	for delay := time.Second; ctx.Err() == nil; delay = min(2*delay, 5*time.Minute) {
		err := m.opts.Client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: sel})
		if err == nil || apierrors.IsNotFound(err) {
			log.Info("Deleted the node's ResourceSlices", "fieldSelector", sel)
			return
		}
		log.Error(err, "Deleting the ResourceSlices of a DRA driver that has gone failed; retrying", "after", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		m.mu.Lock()
		back = name != "" && m.usable(name)
		m.mu.Unlock()
		if back {
			return
		}
	}
}

// Registered tells whether a driver is registered.
func (m *Manager) Registered(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.drivers[name] != nil
}

// ---- the pod path ------------------------------------------------------------

// PrepareResources prepares the pod's claims before its sandbox is
// created: each must be allocated and reserved for the pod, and each
// driver's NodePrepareResources must succeed. An error leaves the pod
// waiting; it is retried.
func (m *Manager) PrepareResources(ctx context.Context, pod *v1.Pod) error {
	if len(pod.Spec.ResourceClaims) == 0 {
		return nil
	}
	if m.opts.Client == nil {
		return errors.New("ResourceClaims need the API server, and this kubelet runs standalone")
	}
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	type item struct {
		rc      *resourceapi.ResourceClaim
		drivers []string
	}
	var items []item
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, mustCheckOwner, err := resourceclaim.Name(pod, pc)
		if err != nil {
			return err
		}
		if name == nil {
			continue
		}
		rc, err := m.opts.Client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(pod, rc, false); err != nil {
				return err
			}
		}
		if rc.Status.Allocation == nil {
			return fmt.Errorf("ResourceClaim %s is not allocated yet", rc.Name)
		}
		if !resourceclaim.IsReservedForPod(pod, rc, false) {
			return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s): it is not reserved for the pod", pod.Name, pod.UID, rc.Name, rc.UID)
		}
		drivers, err := driversOf(rc)
		if err != nil {
			return fmt.Errorf("ResourceClaim %s: %w", rc.Name, err)
		}
		items = append(items, item{rc, drivers})
	}

	m.opMu.Lock()
	defer m.opMu.Unlock()
	batches := map[string][]*drapb.Claim{}
	pending := map[types.UID]*claim{}
	m.mu.Lock()
	for _, it := range items {
		key := claimKey(it.rc.Namespace, it.rc.Name)
		c := m.claims[key]
		if c != nil && c.ClaimUID != it.rc.UID {
			m.mu.Unlock()
			return fmt.Errorf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", it.rc.Name, c.ClaimUID)
		}
		if c == nil {
			c = &claim{claimState: claimState{ClaimUID: it.rc.UID, ClaimName: it.rc.Name, Namespace: it.rc.Namespace, PodUIDs: sets.New[string](), DriverState: map[string]driverState{}}}
			for _, d := range it.drivers {
				c.DriverState[d] = driverState{}
			}
			m.claims[key] = c
		}
		c.PodUIDs.Insert(string(pod.UID))
		if c.prepared {
			continue
		}
		pending[c.ClaimUID] = c
		for _, d := range it.drivers {
			batches[d] = append(batches[d], &drapb.Claim{Namespace: c.Namespace, Uid: string(c.ClaimUID), Name: c.ClaimName})
		}
	}
	m.mu.Unlock()
	m.checkpoint(log)

	for _, name := range sortedKeys(batches) {
		claims := batches[name]
		d := m.driver(name)
		if d == nil {
			return fmt.Errorf("DRA driver %s is not registered on this node", name)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := d.client.NodePrepareResources(cctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
		cancel()
		if err != nil {
			return fmt.Errorf("NodePrepareResources of DRA driver %s: %w", name, err)
		}
		m.mu.Lock()
		for _, cl := range claims {
			res := resp.GetClaims()[cl.Uid]
			if res == nil {
				m.mu.Unlock()
				return fmt.Errorf("NodePrepareResources of DRA driver %s skipped ResourceClaim %s", name, cl.Name)
			}
			if res.Error != "" {
				m.mu.Unlock()
				return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: %s", cl.Name, res.Error)
			}
			var devs []deviceState
			for _, dv := range res.Devices {
				devs = append(devs, deviceState{PoolName: dv.PoolName, DeviceName: dv.DeviceName, ShareID: (*types.UID)(dv.ShareId), RequestNames: dv.RequestNames, CDIDeviceIDs: dv.CdiDeviceIds})
			}
			c := pending[types.UID(cl.Uid)]
			st := c.DriverState[name]
			st.Devices = devs
			c.DriverState[name] = st
		}
		m.mu.Unlock()
	}
	m.mu.Lock()
	for _, c := range pending {
		c.prepared = true
	}
	m.mu.Unlock()
	m.checkpoint(log)
	if len(pending) > 0 {
		log.V(2).Info("ResourceClaims prepared", "claims", len(pending))
	}
	return nil
}

// CDIDevices are the CDI devices of the claims a container uses.
func (m *Manager) CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error) {
	if len(c.Resources.Claims) == 0 {
		return nil, nil
	}
	used, err := containerClaims(pod, c)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return cdiDevicesFor(m.claims, pod.Namespace, used)
}

// UnprepareResources releases a stopped pod's claims: a claim other pods
// on the node still use loses only this pod; the last pod's going
// unprepares it with its drivers.
func (m *Manager) UnprepareResources(ctx context.Context, uid types.UID) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.unprepare(ctx, sets.New(string(uid)))
}

// unprepare releases the claims of the given pods (opMu held).
func (m *Manager) unprepare(ctx context.Context, gone sets.Set[string]) error {
	log := klog.FromContext(ctx)
	batches := map[string][]*drapb.Claim{}
	var last []string
	m.mu.Lock()
	changed := false
	for key, c := range m.claims {
		if !c.PodUIDs.HasAny(sets.List(gone)...) {
			continue
		}
		if c.PodUIDs.Difference(gone).Len() > 0 {
			c.PodUIDs = c.PodUIDs.Difference(gone)
			changed = true
			continue
		}
		last = append(last, key)
		for _, d := range sortedKeys(c.DriverState) {
			batches[d] = append(batches[d], &drapb.Claim{Namespace: c.Namespace, Uid: string(c.ClaimUID), Name: c.ClaimName})
		}
	}
	m.mu.Unlock()
	if changed {
		m.checkpoint(log)
	}
	var errs []error
	failed := sets.New[string]()
	for _, name := range sortedKeys(batches) {
		claims := batches[name]
		err := m.unprepareWith(ctx, name, claims)
		if err != nil {
			errs = append(errs, err)
			for _, cl := range claims {
				failed.Insert(claimKey(cl.Namespace, cl.Name))
			}
		}
	}
	m.mu.Lock()
	for _, key := range last {
		if !failed.Has(key) {
			delete(m.claims, key)
		}
	}
	m.mu.Unlock()
	if len(last) > 0 {
		m.checkpoint(log)
	}
	if len(last)-failed.Len() > 0 {
		log.V(2).Info("ResourceClaims unprepared", "claims", len(last)-failed.Len())
	}
	return errors.Join(errs...)
}

func (m *Manager) unprepareWith(ctx context.Context, name string, claims []*drapb.Claim) error {
	d := m.driver(name)
	if d == nil {
		return fmt.Errorf("DRA driver %s is not registered on this node: its ResourceClaims stay prepared until it is", name)
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := d.client.NodeUnprepareResources(cctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
	if err != nil {
		return fmt.Errorf("NodeUnprepareResources of DRA driver %s: %w", name, err)
	}
	for _, cl := range claims {
		res := resp.GetClaims()[cl.Uid]
		if res == nil {
			return fmt.Errorf("NodeUnprepareResources of DRA driver %s skipped ResourceClaim %s", name, cl.Name)
		}
		if res.Error != "" {
			return fmt.Errorf("NodeUnprepareResources failed for ResourceClaim %s: %s", cl.Name, res.Error)
		}
	}
	return nil
}

// reconcile unprepares the claims of pods that are no longer active
// (deleted while the kubelet was down), once every source has been seen.
func (m *Manager) reconcile(ctx context.Context) {
	if m.opts.ActivePods == nil || (m.opts.SourcesReady != nil && !m.opts.SourcesReady()) {
		return
	}
	active := sets.New[string]()
	for _, p := range m.opts.ActivePods() {
		active.Insert(string(p.UID))
	}
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.mu.Lock()
	gone := sets.New[string]()
	for _, c := range m.claims {
		gone.Insert(c.PodUIDs.Difference(active).UnsortedList()...)
	}
	m.mu.Unlock()
	if gone.Len() == 0 {
		return
	}
	if err := m.unprepare(ctx, gone); err != nil {
		klog.FromContext(ctx).Error(err, "Unpreparing the ResourceClaims of pods that are gone failed; retrying later")
	}
}

func (m *Manager) driver(name string) *driver {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.drivers[name]
}

func (m *Manager) checkpoint(log klog.Logger) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := writeState(m.statePath(), m.claims); err != nil {
		log.Error(err, "Writing the DRA checkpoint failed")
	}
}

// ---- pod-resources ------------------------------------------------------------

// DynamicResources are a container's prepared devices for the
// pod-resources API.
func (m *Manager) DynamicResources(pod *v1.Pod, container string) []*podresourcesv1.DynamicResource {
	var c *v1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == container {
			c = &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil || len(c.Resources.Claims) == 0 {
		return nil
	}
	used, err := containerClaims(pod, c)
	if err != nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*podresourcesv1.DynamicResource
	for _, name := range sortedKeys(used) {
		cl := m.claims[claimKey(pod.Namespace, name)]
		if cl == nil {
			continue
		}
		r := &podresourcesv1.DynamicResource{ClaimName: cl.ClaimName, ClaimNamespace: cl.Namespace}
		for _, d := range sortedKeys(cl.DriverState) {
			for _, dev := range cl.DriverState[d].Devices {
				cr := &podresourcesv1.ClaimResource{DriverName: d, PoolName: dev.PoolName, DeviceName: dev.DeviceName}
				for _, id := range dev.CDIDeviceIDs {
					cr.CdiDevices = append(cr.CdiDevices, &podresourcesv1.CDIDevice{Name: id})
				}
				r.ClaimResources = append(r.ClaimResources, cr)
			}
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ClaimName < out[j].ClaimName })
	return out
}

// ClaimsInUse is dra_resource_claims_in_use at scrape time: the prepared
// claims by driver name, and in all under AnyDriver.
func (m *Manager) ClaimsInUse() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return claimsInUse(m.claims)
}
