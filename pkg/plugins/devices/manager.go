// Package devices is the node's device plugin manager (the device plugin
// API, k8s.io/kubelet deviceplugin v1beta1):
//
//   - it serves the Registration service on <Dir>/kubelet.sock (upstream's
//     fixed /var/lib/kubelet/device-plugins/kubelet.sock, whatever the
//     root directory), and also takes device plugins that register through
//     the plugins_registry (pkg/plugins/registration);
//   - each plugin's ListAndWatch stream becomes its resource's capacity
//     (every device) and allocatable (the healthy ones) on the Node. A
//     plugin that goes makes its devices unallocatable at once, and its
//     resource drops to 0 after upstream's grace period (5 minutes);
//   - admission allocates a pod's devices (the plugin's
//     GetPreferredAllocation, then Allocate) and refuses the pod with
//     UnexpectedAdmissionError when it cannot;
//   - before each container starts, PreStartContainer (when the plugin
//     asks for it), and the envs, mounts, devices, annotations and CDI
//     devices Allocate returned are handed to CRI;
//   - assignments are checkpointed in upstream's kubelet_internal_checkpoint
//     (package checkpoint), so a restarted kubelet, or an upstream kubelet
//     taking the node back, keeps them;
//   - the pod-resources API (pkg/podresources) reads the assignments.
//
// state.go holds the decisions as pure functions; this file and
// endpoint.go do the I/O.
package devices

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
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/plugins/devices/checkpoint"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// PluginType is the plugins_registry type of device plugins.
const PluginType = "DevicePlugin"

// DefaultGracePeriod is how long the resource of a plugin that has gone
// keeps its capacity (upstream's endpointStopGracePeriod).
const DefaultGracePeriod = 5 * time.Minute

// ReasonUnexpectedAdmissionError is the admission reason of a pod whose
// devices could not be allocated (upstream's).
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// Event reasons on the Node about plugins.
const (
	EventPluginRejected       = "DevicePluginRejected"
	EventPluginInvalidDevices = "DevicePluginInvalidDevices"
	EventPluginGone           = "DevicePluginGone"
)

// Options configure a Manager.
type Options struct {
	// Dir holds the registration socket, the plugins' sockets and the
	// checkpoint (default pluginapi.DevicePluginPath).
	Dir string
	// ActivePods are the pods that hold or may hold devices: the node's
	// pods that have not finished. Assignments of other pods are freed.
	ActivePods func() []*v1.Pod
	// SourcesReady tells that every pod source has been seen, so
	// ActivePods is complete (after a restart, until then, no assignment
	// is freed).
	SourcesReady func() bool
	// RunningPods lists the pods the runtime runs: a ready sandbox or a
	// running container. The manager asks once at start, and only when
	// the checkpoint holds assignments: such a pod keeps its devices at
	// its first admission (a kubelet restart); one the runtime does not
	// run must find them registered and healthy (a node reboot). Nil, or
	// an error, keeps every held assignment unchecked, as if every pod
	// ran.
	RunningPods func(ctx context.Context) (sets.Set[types.UID], error)
	// Changed is told that capacity or allocatable changed (the Node's
	// status is due).
	Changed func()
	// PodsChanged is told the pods whose devices changed health, so their
	// status (allocatedResourcesStatus) is computed again.
	PodsChanged func(uids []types.UID)
	// Recorder and NodeRef, when set, get events about plugins.
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
	// GracePeriod defaults to DefaultGracePeriod.
	GracePeriod time.Duration
	Clock       clock.Clock
}

// Manager is the device plugin manager. Run it with Start.
type Manager struct {
	opts Options

	mu        sync.Mutex
	resources map[string]*resourceState
	gone      sets.Set[string]
	pods      assignments
	ctx       context.Context
	// atStart are the pods holding devices that ran at start and have
	// not been admitted since (see Options.RunningPods); atStartUnknown
	// when the runtime could not tell.
	atStart        sets.Set[string]
	atStartUnknown bool

	// allocMu serialises allocations, which call plugins outside mu.
	allocMu sync.Mutex
	// writeMu serialises checkpoint writes.
	writeMu sync.Mutex
	// ready is closed once the checkpoint is restored and the
	// registration socket listens.
	ready chan struct{}

	pluginapi.UnsafeRegistrationServer
}

// New builds a manager.
func New(o Options) *Manager {
	if o.Dir == "" {
		o.Dir = pluginapi.DevicePluginPath
	}
	if o.GracePeriod <= 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Manager{opts: o, resources: map[string]*resourceState{}, gone: sets.New[string](), pods: assignments{}, ctx: context.Background(), ready: make(chan struct{})}
}

// Socket is the registration socket.
func (m *Manager) Socket() string {
	return filepath.Join(m.opts.Dir, filepath.Base(pluginapi.KubeletSocket))
}

// Start restores the checkpoint, clears stale plugin sockets (so plugins
// notice the kubelet is new and register again), and serves the
// Registration service until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("socket", m.Socket())
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	if err := os.MkdirAll(m.opts.Dir, 0o750); err != nil {
		return fmt.Errorf("device plugin directory: %w", err)
	}
	m.restore(log)
	m.listRunning(ctx, log)
	m.removeSockets(log)
	l, err := net.Listen("unix", m.Socket())
	if err != nil {
		return fmt.Errorf("device plugin registration socket: %w", err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(srv, m)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	log.Info("Device plugin registration serving")
	close(m.ready)
	select {
	case <-ctx.Done():
	case err = <-done:
		log.Error(err, "Device plugin registration server stopped")
	}
	srv.Stop()
	m.mu.Lock()
	for _, r := range m.resources {
		if r.endpoint != nil {
			r.endpoint.close()
		}
		for _, o := range r.standby {
			o.close()
		}
	}
	m.mu.Unlock()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Ready is closed once the assignments are restored and plugins can
// register: admission waits for it (the group starts the engine after).
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// restore reads the checkpoint: assignments, and the resources known
// before (without devices until their plugins register again, and with
// the grace period running from now).
func (m *Manager) restore(log klog.Logger) {
	entries, registered, err := checkpoint.Read(m.opts.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		log.Error(err, "Device assignments are not restored: the checkpoint cannot be read", "checkpoint", filepath.Join(m.opts.Dir, checkpoint.FileName))
		return
	}
	now := m.opts.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range registered {
		m.resources[name] = &resourceState{devices: map[string]*pluginapi.Device{}, stoppedAt: now}
	}
	for _, e := range entries {
		resp := &pluginapi.ContainerAllocateResponse{}
		if err := proto.Unmarshal(e.AllocResp, resp); err != nil {
			log.Error(err, "Dropping a device assignment from the checkpoint: its Allocate answer cannot be read", "podUID", e.PodUID, "container", e.ContainerName, "resource", e.ResourceName)
			continue
		}
		m.pods.set(e.PodUID, e.ContainerName, e.ResourceName, &assignment{ids: e.DeviceIDs, resp: resp})
	}
	log.Info("Device assignments restored from the checkpoint", "assignments", len(entries), "resources", len(registered))
}

// listRunning records which pods holding devices the runtime runs at
// start (see Options.RunningPods).
func (m *Manager) listRunning(ctx context.Context, log klog.Logger) {
	m.mu.Lock()
	held := len(m.pods) > 0
	m.mu.Unlock()
	if !held {
		return
	}
	if m.opts.RunningPods == nil {
		m.mu.Lock()
		m.atStartUnknown = true
		m.mu.Unlock()
		return
	}
	running, err := m.opts.RunningPods(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.atStartUnknown = true
		log.Error(err, "The runtime's running pods are unknown: every pod holding devices from before keeps them at its admission, as after a kubelet restart")
		return
	}
	m.atStart = sets.New[string]()
	for uid := range m.pods {
		if running.Has(types.UID(uid)) {
			m.atStart.Insert(uid)
		}
	}
	log.Info("Pods holding devices from before", "running", m.atStart.Len(), "notRunning", len(m.pods)-m.atStart.Len())
}

// runningAtStart: the runtime ran the pod when the kubelet started (or
// could not tell), and the pod has not been admitted since. Callers hold
// mu.
func (m *Manager) runningAtStart(uid string) bool {
	return m.atStartUnknown || m.atStart.Has(uid)
}

// removeSockets removes the sockets in the directory (not the checkpoint,
// not directories), as upstream does at start.
func (m *Manager) removeSockets(log klog.Logger) {
	ents, err := os.ReadDir(m.opts.Dir)
	if err != nil {
		log.Error(err, "Listing the device plugin directory failed")
		return
	}
	for _, e := range ents {
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(m.opts.Dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Error(err, "Removing a stale socket failed", "path", e.Name())
		}
	}
}

// ---- registration --------------------------------------------------------

// Register is the Registration service: a plugin tells its resource name,
// API version, socket (a name in Dir) and options.
func (m *Manager) Register(ctx context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	log := klog.FromContext(m.context()).WithValues("resource", r.ResourceName, "endpoint", r.Endpoint)
	metrics.DevicePluginRegistrations.WithLabelValues(metricLabel(r.ResourceName)).Inc()
	if err := validRegistration(r.ResourceName, []string{r.Version}); err != nil {
		return m.reject(log, r.ResourceName, err)
	}
	if r.Endpoint == "" || r.Endpoint != filepath.Base(r.Endpoint) || r.Endpoint == "." || r.Endpoint == ".." {
		return m.reject(log, r.ResourceName, fmt.Errorf("endpoint %q is not the name of a socket in %s", r.Endpoint, m.opts.Dir))
	}
	if err := m.connect(log, r.ResourceName, filepath.Join(m.opts.Dir, r.Endpoint)); err != nil {
		return m.reject(log, r.ResourceName, err)
	}
	return &pluginapi.Empty{}, nil
}

// metricLabel bounds a label value that a plugin chooses.
func metricLabel(s string) string {
	if len(s) > 253 {
		return s[:253]
	}
	return s
}

func (m *Manager) reject(log klog.Logger, resource string, err error) (*pluginapi.Empty, error) {
	log.Error(err, "Device plugin registration refused")
	m.event(v1.EventTypeWarning, EventPluginRejected, "Device plugin for %.253q refused: %v", resource, err)
	return &pluginapi.Empty{}, err
}

// validRegistration: an extended resource name, and the v1beta1 API.
func validRegistration(resource string, versions []string) error {
	ok := false
	for _, v := range versions {
		for _, s := range pluginapi.SupportedVersions {
			ok = ok || v == s
		}
	}
	if !ok {
		return fmt.Errorf("requested API versions %q are not supported by kubelet. Supported versions are %q", versions, pluginapi.SupportedVersions)
	}
	if !podspec.IsExtendedResourceName(v1.ResourceName(resource)) {
		return fmt.Errorf("the ResourceName %q is invalid: not an extended resource name", resource)
	}
	return nil
}

// connect dials a plugin and makes it the resource's serving plugin. One
// registered before on the same socket is replaced (closed; its stream's
// end then changes nothing); one on another socket stands by.
func (m *Manager) connect(log klog.Logger, resource, socket string) error {
	ctx := m.context()
	e, err := dial(ctx, resource, socket)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	stream, err := e.client.ListAndWatch(sctx, &pluginapi.Empty{})
	if err != nil {
		e.close()
		return fmt.Errorf("ListAndWatch of %s at %s: %w", resource, socket, err)
	}
	m.mu.Lock()
	r := m.resources[resource]
	if r == nil {
		r = &resourceState{devices: map[string]*pluginapi.Device{}}
		m.resources[resource] = r
	}
	replaced := r.add(e)
	standby := len(r.standby)
	m.gone.Delete(resource)
	m.mu.Unlock()
	for _, old := range replaced {
		old.close()
		log.Info("Device plugin replaced by a new registration on its socket", "old", old.socket)
	}
	if standby > 0 {
		log.Info("Device plugin serves a resource other plugins serve too: it takes the allocations, they stand by", "standby", standby)
	}
	log.Info("Device plugin registered", "socket", socket, "preStartRequired", e.options.GetPreStartRequired(), "getPreferredAllocation", e.options.GetGetPreferredAllocationAvailable())
	go m.watch(log, e, stream)
	m.changed()
	return nil
}

// watch receives the plugin's device lists until its stream ends.
func (m *Manager) watch(log klog.Logger, e *endpoint, stream pluginapi.DevicePlugin_ListAndWatchClient) {
	for {
		resp, err := stream.Recv()
		if err != nil {
			m.stopped(log, e, err)
			return
		}
		m.update(log, e, resp.Devices)
	}
}

// update takes a device list from one of the resource's plugins (the
// last list of any of them is the resource's, as upstream).
func (m *Manager) update(log klog.Logger, e *endpoint, devs []*pluginapi.Device) {
	valid, problems := validDevices(devs)
	if len(problems) > 0 {
		shown := problems
		if len(shown) > 3 {
			shown = append(shown[:3:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		log.Error(nil, "Device plugin listed invalid devices; they are ignored", "problems", shown)
		m.event(v1.EventTypeWarning, EventPluginInvalidDevices, "Device plugin for %s listed invalid devices, ignored: %s", e.resource, strings.Join(shown, "; "))
	}
	m.mu.Lock()
	r := m.resources[e.resource]
	if r == nil || !r.serves(e) {
		m.mu.Unlock()
		return
	}
	old := r.devices
	r.devices = valid
	healthy := r.healthy().Len()
	changed := m.podsWithHealthChanges(e.resource, old, valid)
	m.mu.Unlock()
	if len(changed) > 0 && m.opts.PodsChanged != nil {
		m.opts.PodsChanged(changed)
	}
	log.V(2).Info("Device plugin listed its devices", "devices", len(valid), "healthy", healthy)
	m.writeCheckpoint(log)
	m.changed()
}

// stopped handles the end of a plugin's stream. If another plugin of the
// resource is left, it serves the resource from now on; if it was the
// last, the devices become unallocatable and the grace period starts.
func (m *Manager) stopped(log klog.Logger, e *endpoint, err error) {
	e.close()
	m.mu.Lock()
	r := m.resources[e.resource]
	var found, last bool
	var now *endpoint
	if r != nil {
		found, last = r.remove(e, m.opts.Clock.Now())
		now = r.endpoint
	}
	m.mu.Unlock()
	if !found || m.context().Err() != nil {
		return // replaced before, or the kubelet is stopping
	}
	if !last {
		log.Info("Device plugin stopped; another plugin of its resource serves it", "stopped", e.socket, "serving", now.socket, "reason", err)
		return
	}
	log.Error(err, "Device plugin's ListAndWatch ended: its devices are unallocatable now", "gracePeriod", m.opts.GracePeriod)
	m.event(v1.EventTypeWarning, EventPluginGone, "Device plugin for %s is gone (%v); its devices are unallocatable, and its capacity drops to 0 after %s unless it registers again", e.resource, err, m.opts.GracePeriod)
	m.changed()
}

// ---- the plugins_registry (registration.Handler) ---------------------------

// ValidatePlugin checks a device plugin found in the plugins_registry.
func (m *Manager) ValidatePlugin(name, _ string, versions []string) error {
	return validRegistration(name, versions)
}

// RegisterPlugin connects a device plugin found in the plugins_registry.
func (m *Manager) RegisterPlugin(ctx context.Context, name, endpoint string, _ []string) error {
	metrics.DevicePluginRegistrations.WithLabelValues(metricLabel(name)).Inc()
	return m.connect(klog.FromContext(ctx).WithValues("resource", name, "endpoint", endpoint), name, endpoint)
}

// DeRegisterPlugin forgets a plugins_registry device plugin whose socket
// is gone.
func (m *Manager) DeRegisterPlugin(ctx context.Context, name, socket string) {
	m.mu.Lock()
	r := m.resources[name]
	var e *endpoint
	if r != nil {
		e = r.bySocket(socket)
	}
	m.mu.Unlock()
	if e != nil {
		m.stopped(klog.FromContext(ctx).WithValues("resource", name), e, errors.New("its registration socket was removed"))
	}
}

// ---- what the Node reports -------------------------------------------------

// Capacity is the device plugin resources' capacity and allocatable for
// the Node's status. Resources past their grace period are removed here,
// and reported at 0 from then on.
func (m *Manager) Capacity() (capacity, allocatable v1.ResourceList) {
	m.mu.Lock()
	capacity, allocatable, expired := resourceCapacity(m.resources, m.gone, m.opts.Clock.Now(), m.opts.GracePeriod)
	for _, name := range expired {
		delete(m.resources, name)
		m.gone.Insert(name)
	}
	m.mu.Unlock()
	if len(expired) > 0 {
		log := klog.FromContext(m.context())
		log.Info("Device plugin resources removed: their plugins did not come back within the grace period", "resources", expired, "gracePeriod", m.opts.GracePeriod)
		m.writeCheckpoint(log)
	}
	return capacity, allocatable
}

// ---- admission and container start ---------------------------------------

// isDeviceResource: a resource a plugin serves or served, or that an
// assignment holds.
func (m *Manager) isDeviceResource(name string) bool {
	if _, ok := m.resources[name]; ok {
		return true
	}
	return m.pods.resources().Has(name)
}

// deviceLimits are a container's device plugin resources and counts.
func (m *Manager) deviceLimits(c *v1.Container) map[string]int {
	var out map[string]int
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, q := range c.Resources.Limits {
		if q.Value() <= 0 || !m.isDeviceResource(string(name)) {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[string(name)] = int(q.Value())
	}
	return out
}

// Admit allocates the pod's devices, container by container (init
// containers first; devices of init containers that have finished are
// reused by the containers after them). It refuses the pod when a
// resource has too few healthy devices or its plugin fails.
func (m *Manager) Admit(pod *v1.Pod) (bool, string, string) {
	needs := false
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			needs = needs || len(m.deviceLimits(&cs[i])) > 0
		}
	}
	if !needs {
		return true, "", ""
	}
	ctx := m.context()
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	m.allocMu.Lock()
	defer m.allocMu.Unlock()
	m.freeInactive(log, pod.UID)
	err := m.allocatePod(ctx, log, pod)
	m.mu.Lock()
	m.atStart.Delete(string(pod.UID)) // only the first admission since start
	m.mu.Unlock()
	if err != nil {
		m.mu.Lock()
		delete(m.pods, string(pod.UID))
		m.mu.Unlock()
		m.writeCheckpoint(log)
		return false, ReasonUnexpectedAdmissionError, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
	}
	m.writeCheckpoint(log)
	return true, "", ""
}

func (m *Manager) allocatePod(ctx context.Context, log klog.Logger, pod *v1.Pod) error {
	reusable := map[string]sets.Set[string]{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		got, err := m.allocateContainer(ctx, log, pod, c, reusable)
		if err != nil {
			return err
		}
		for res, ids := range got {
			if reusable[res] == nil {
				reusable[res] = sets.New[string]()
			}
			if podspec.IsSidecar(c) {
				reusable[res].Delete(ids...) // runs beside the containers after it
			} else {
				reusable[res].Insert(ids...) // finished before the next starts
			}
		}
	}
	for i := range pod.Spec.Containers {
		got, err := m.allocateContainer(ctx, log, pod, &pod.Spec.Containers[i], reusable)
		if err != nil {
			return err
		}
		for res, ids := range got {
			if reusable[res] != nil {
				reusable[res].Delete(ids...)
			}
		}
	}
	return nil
}

// allocateContainer gives one container its devices (those it holds
// already are kept) and returns them by resource.
func (m *Manager) allocateContainer(ctx context.Context, log klog.Logger, pod *v1.Pod, c *v1.Container, reusable map[string]sets.Set[string]) (map[string][]string, error) {
	limits := m.deviceLimits(c)
	names := make([]string, 0, len(limits))
	for n := range limits {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string][]string{}
	uid := string(pod.UID)
	for _, res := range names {
		needed := limits[res]
		m.mu.Lock()
		if as := m.pods.get(uid, c.Name, res); as != nil {
			held := as.ids.IDs()
			err := keepHeld(res, held, m.runningAtStart(uid), m.resources[res])
			m.mu.Unlock()
			if len(held) != needed {
				return nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", uid, c.Name, res, len(held), needed)
			}
			if err != nil {
				return nil, err
			}
			out[res] = held
			continue
		}
		r := m.resources[res]
		if r == nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("cannot allocate unregistered device %s", res)
		}
		healthy, inUse, e, known := r.healthy(), m.pods.inUse(res), r.endpoint, r.devices
		m.mu.Unlock()
		if healthy.Len() == 0 || e == nil {
			return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", res)
		}
		reuse := reusable[res]
		if reuse == nil {
			reuse = sets.New[string]()
		}
		free := healthy.Difference(inUse)
		var preferred []string
		if reuse.Len() < needed && free.Len() > needed-reuse.Len() {
			var err error
			if preferred, err = e.preferred(ctx, sets.List(free.Union(reuse)), sets.List(reuse), needed); err != nil {
				return nil, err
			}
		}
		ids, err := choose(res, needed, healthy, inUse, reuse, preferred)
		if err != nil {
			return nil, err
		}
		start := m.opts.Clock.Now()
		resp, err := e.allocate(ctx, ids)
		metrics.DevicePluginAllocationDuration.WithLabelValues(metricLabel(res)).Observe(m.opts.Clock.Since(start).Seconds())
		if err != nil {
			return nil, fmt.Errorf("device plugin %s Allocate failed: %w", res, err)
		}
		if len(resp.GetContainerResponses()) == 0 {
			return nil, fmt.Errorf("no containers return in allocation response %v", resp)
		}
		if err := validResponse(resp.ContainerResponses[0]); err != nil {
			return nil, fmt.Errorf("device plugin %s returned an invalid Allocate answer: %w", res, err)
		}
		m.mu.Lock()
		m.pods.set(uid, c.Name, res, &assignment{ids: devicesPerNUMA(ids, known), resp: resp.ContainerResponses[0]})
		m.mu.Unlock()
		log.V(2).Info("Devices allocated", "container", c.Name, "resource", res, "devices", ids)
		out[res] = ids
	}
	return out, nil
}

// freeInactive frees the assignments of pods that are no longer active
// (except keep), once every pod source has been seen.
func (m *Manager) freeInactive(log klog.Logger, keep types.UID) {
	if m.opts.ActivePods == nil || (m.opts.SourcesReady != nil && !m.opts.SourcesReady()) {
		return
	}
	active := sets.New(string(keep))
	for _, p := range m.opts.ActivePods() {
		active.Insert(string(p.UID))
	}
	m.mu.Lock()
	var freed []string
	for uid := range m.pods {
		if !active.Has(uid) {
			delete(m.pods, uid)
			freed = append(freed, uid)
		}
	}
	m.mu.Unlock()
	if len(freed) > 0 {
		log.V(2).Info("Devices of pods that have finished are free again", "pods", freed)
	}
}

// ContainerOptions are what a container's devices add to its CRI
// configuration; before it, PreStartContainer is called for plugins that
// ask for it. A container of an active pod without its devices (its
// assignment was lost) is allocated them now.
func (m *Manager) ContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container) (RunOptions, error) {
	limits := m.deviceLimits(c)
	if len(limits) == 0 {
		return RunOptions{}, nil
	}
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "container", c.Name)
	uid := string(pod.UID)
	m.mu.Lock()
	missing := false
	for res := range limits {
		missing = missing || m.pods.get(uid, c.Name, res) == nil
	}
	m.mu.Unlock()
	if missing {
		m.allocMu.Lock()
		_, err := m.allocateContainer(ctx, log, pod, c, nil)
		m.allocMu.Unlock()
		if err != nil {
			return RunOptions{}, err
		}
		m.writeCheckpoint(log)
	}
	held := map[string]*assignment{}
	for res := range limits {
		m.mu.Lock()
		as := m.pods.get(uid, c.Name, res)
		var e *endpoint
		if r := m.resources[res]; r != nil {
			e = r.endpoint
		}
		m.mu.Unlock()
		if as == nil {
			return RunOptions{}, fmt.Errorf("no devices found allocated in local cache for pod %s, container %s, resource %s", uid, c.Name, res)
		}
		held[res] = as
		if e != nil {
			if err := e.preStart(ctx, as.ids.IDs()); err != nil {
				return RunOptions{}, err
			}
		}
	}
	o, conflicts := runOptions(held)
	if len(conflicts) > 0 {
		log.Error(nil, "Device plugins' Allocate answers conflict; the first one is used", "conflicts", conflicts)
	}
	return o, nil
}

// podsWithHealthChanges are the pods holding a device of res whose
// health differs between two lists (mu held).
func (m *Manager) podsWithHealthChanges(res string, before, after map[string]*pluginapi.Device) []types.UID {
	health := func(devs map[string]*pluginapi.Device, id string) string {
		if d := devs[id]; d != nil {
			return d.Health
		}
		return ""
	}
	var out []types.UID
	for uid, cs := range m.pods {
		for _, byRes := range cs {
			as := byRes[res]
			if as == nil {
				continue
			}
			changed := false
			for _, id := range as.ids.IDs() {
				changed = changed || health(before, id) != health(after, id)
			}
			if changed {
				out = append(out, types.UID(uid))
				break
			}
		}
	}
	return out
}

// SetResourcesStatus sets, in a pod's computed status, each container's
// allocatedResourcesStatus for its devices (ResourceHealthStatus): per
// resource, each device with its health as its plugin lists it (a
// device the plugin no longer lists, or whose plugin has gone, keeps the
// last health it was listed with; one never listed counts as healthy, as
// upstream counts it).
func (m *Manager) SetResourcesStatus(pod *v1.Pod, st *v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.pods[string(pod.UID)]
	if len(cs) == 0 {
		return
	}
	for i := range st.ContainerStatuses {
		byRes := cs[st.ContainerStatuses[i].Name]
		if len(byRes) == 0 {
			continue
		}
		var out []v1.ResourceStatus
		for _, res := range sortedMapKeys(byRes) {
			ids := byRes[res].ids.IDs()
			sort.Strings(ids)
			rs := v1.ResourceStatus{Name: v1.ResourceName(res), Resources: []v1.ResourceHealth{}}
			for _, id := range ids {
				health := v1.ResourceHealthStatusHealthy
				if r := m.resources[res]; r != nil {
					if d := r.devices[id]; d != nil && d.Health != pluginapi.Healthy {
						health = v1.ResourceHealthStatusUnhealthy
					}
				}
				rs.Resources = append(rs.Resources, v1.ResourceHealth{ResourceID: v1.ResourceID(id), Health: health})
			}
			out = append(out, rs)
		}
		st.ContainerStatuses[i].AllocatedResourcesStatus = podstatus.MergeResourceStatus(st.ContainerStatuses[i].AllocatedResourcesStatus, out)
	}
}

// ---- pod-resources --------------------------------------------------------

// ContainerDevices are a container's devices for the pod-resources API:
// one entry per device (and NUMA node), by resource name.
func (m *Manager) ContainerDevices(podUID, container string) []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	byRes := m.pods[podUID][container]
	names := make([]string, 0, len(byRes))
	for n := range byRes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*podresourcesv1.ContainerDevices
	for _, n := range names {
		numas := make([]int64, 0, len(byRes[n].ids))
		for numa := range byRes[n].ids {
			numas = append(numas, numa)
		}
		sort.Slice(numas, func(i, j int) bool { return numas[i] < numas[j] })
		for _, numa := range numas {
			ids := append([]string(nil), byRes[n].ids[numa]...)
			sort.Strings(ids)
			for _, id := range ids {
				out = append(out, containerDevice(n, id, numa))
			}
		}
	}
	return out
}

// AllocatableDevices are the healthy devices of the registered plugins.
func (m *Manager) AllocatableDevices() []*podresourcesv1.ContainerDevices {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.resources))
	for n := range m.resources {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*podresourcesv1.ContainerDevices
	for _, n := range names {
		r := m.resources[n]
		for _, id := range sets.List(r.healthy()) {
			d := r.devices[id]
			if d.Topology == nil || len(d.Topology.Nodes) == 0 {
				out = append(out, containerDevice(n, id, checkpoint.NoTopology))
				continue
			}
			for _, node := range d.Topology.Nodes {
				out = append(out, containerDevice(n, id, node.ID))
			}
		}
	}
	return out
}

func containerDevice(res, id string, numa int64) *podresourcesv1.ContainerDevices {
	d := &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: []string{id}}
	if numa != checkpoint.NoTopology {
		d.Topology = &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: numa}}}
	}
	return d
}

// ---- helpers ---------------------------------------------------------------

func (m *Manager) context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx
}

func (m *Manager) changed() {
	if m.opts.Changed != nil {
		m.opts.Changed()
	}
}

func (m *Manager) event(kind, reason, format string, args ...any) {
	if m.opts.Recorder != nil && m.opts.NodeRef != nil {
		m.opts.Recorder.Eventf(m.opts.NodeRef, kind, reason, format, args...)
	}
}

// writeCheckpoint writes the assignments and each resource's healthy
// devices (what upstream records as registered). A failure is logged: the
// assignments stay in memory.
func (m *Manager) writeCheckpoint(log klog.Logger) {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	registered := make(map[string][]string, len(m.resources))
	for n, r := range m.resources {
		registered[n] = sets.List(r.healthy())
	}
	var entries []checkpoint.PodDevicesEntry
	for _, uid := range sortedMapKeys(m.pods) {
		for _, c := range sortedMapKeys(m.pods[uid]) {
			for _, res := range sortedMapKeys(m.pods[uid][c]) {
				as := m.pods[uid][c][res]
				b, err := proto.Marshal(as.resp)
				if err != nil {
					log.Error(err, "A device assignment is not checkpointed: its Allocate answer cannot be encoded", "podUID", uid, "container", c, "resource", res)
					continue
				}
				entries = append(entries, checkpoint.PodDevicesEntry{PodUID: uid, ContainerName: c, ResourceName: res, DeviceIDs: as.ids, AllocResp: b})
			}
		}
	}
	m.mu.Unlock()
	if err := checkpoint.Write(m.opts.Dir, entries, registered); err != nil {
		log.Error(err, "Writing the device manager checkpoint failed")
	}
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
