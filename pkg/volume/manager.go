package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/node/objects"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/volume/atomicwriter"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/pkg/volume/subpath"
)

// Event reasons (upstream's).
const (
	EventFailedMount = "FailedMount"
)

// Options configure a Manager.
type Options struct {
	// RootDir is the kubelet's root directory (pods live in RootDir/pods).
	RootDir string
	// Objects reads ConfigMaps and Secrets; nil makes configMap and secret
	// volumes fail with a reason.
	Objects objects.Getter
	// Tokens issues service account tokens for projected volumes.
	Tokens objects.TokenGetter
	// TrustBundles reads ClusterTrustBundles for clusterTrustBundle
	// projections (nil: the ClusterTrustBundleProjection gate is off, and
	// such volumes fail with a reason naming it).
	TrustBundles objects.TrustBundleGetter
	// PodCertificates obtains the key and certificate chain of
	// podCertificate projections (nil: the PodCertificateRequest gate is
	// off, and such volumes fail with a reason naming it).
	PodCertificates PodCertificates
	// UserFields honours the owner fields of configMap, secret,
	// downwardAPI and projected volumes (user and defaultUser; the
	// AtomicWriteVolumeUserFields gate). Off, they are ignored as
	// upstream ignores them, with a warning event and a log line
	// (EventFieldsIgnored).
	UserFields bool
	// EmptyDirMode honours an emptyDir's mode, its directory's permission
	// bits (the EmptyDirVolumeMode gate). Off, it is ignored as upstream
	// ignores it, with a warning event and a log line.
	EmptyDirMode bool
	// Claims reads PersistentVolumeClaims and PersistentVolumes.
	Claims ClaimGetter
	// ClaimStatus writes claim status after a node expansion (nil: CSI
	// volumes whose claims wait for the node are not expanded; a reason
	// says so).
	ClaimStatus ClaimStatusWriter
	// CSIDrivers are the CSI drivers registered on the node (nil: none;
	// CSI volumes wait with a reason naming their driver).
	CSIDrivers CSIDrivers
	// CSIAPI reads CSIDriver objects, VolumeAttachments and the secrets
	// CSI volumes name (nil: standalone).
	CSIAPI volcsi.API
	// NodeName names this node (VolumeAttachments are per node).
	NodeName string
	// NodeAllocatable is the node's allocatable resources: the default
	// of a downward API limit a container does not set, and the upper
	// bound of a memory-backed emptyDir.
	NodeAllocatable func() v1.ResourceList
	Recorder        record.EventRecorder
	Clock           clock.WithTicker
	// Resync asks the kubelet to sync a pod again: an object a pod waits
	// for has changed.
	Resync func(types.UID)
	// Evict stops a pod for good, Failed with reason Evicted and message:
	// a disk-backed emptyDir grew past its sizeLimit.
	Evict func(uid types.UID, message string)
	// SizeCheckPeriod is how often disk-backed emptyDirs with a sizeLimit
	// are measured (default 10s, upstream's eviction interval).
	SizeCheckPeriod time.Duration
	// RefreshPeriod is how often configMap, secret, downwardAPI and
	// projected volumes are rewritten from their sources even without a
	// change notice (default 1m): it renews tokens and catches anything a
	// watch missed.
	RefreshPeriod time.Duration
	// ExpansionCheckPeriod is how often set-up CSI claim volumes are
	// checked for a grown PersistentVolume (default RefreshPeriod, the
	// sync frequency upstream re-reads claims at).
	ExpansionCheckPeriod time.Duration
}

// PodCertificates is what podCertificate projections need of
// pkg/node/podcerts: the credential of one source of one pod's volume, and
// forgetting a pod whose volumes are torn down.
type PodCertificates interface {
	CredentialBundle(ctx context.Context, pod *v1.Pod, volumeName string, sourceIndex int, src *v1.PodCertificateProjection) (privateKeyPEM, certChainPEM []byte, err error)
	ForgetPod(uid types.UID)
}

// Manager sets up, refreshes and tears down pod volumes. It is safe for
// concurrent use; work on one pod is serialised.
type Manager struct {
	opts Options
	// csi sets CSI volumes up and tears them down (nil without
	// CSIDrivers).
	csi *volcsi.Mounter

	mu   sync.Mutex
	pods map[types.UID]*podVolumes
	// claims are the measurable claim volumes of each pod (claimstats.go),
	// apart from the pods' locks so stats never wait for a set-up.
	claimMu sync.Mutex
	claims  map[types.UID][]ClaimVolume
	// dirty are pods whose refreshed volumes must be rewritten now.
	dirty map[types.UID]bool
	kick  chan struct{}

	// expansions is the node expansion state of the CSI claim volumes,
	// by pod and volume name (expand.go).
	expMu      sync.Mutex
	expansions map[types.UID]map[string]*expansionState
	// expandSoon are volumes just set up, checked when expandKick fires.
	expandSoon map[types.UID]map[string]bool
	expandKick chan struct{}
}

type podVolumes struct {
	mu  sync.Mutex
	pod *v1.Pod
	// vols are the pod's volumes used by a container, by name.
	vols map[string]*volumeState
	// failures counts SetUpPod calls in a row that left volumes not
	// ready (the retry delay grows with it).
	failures int
	gone     bool
	// evicted: Evict was called for the pod.
	evicted bool
}

type volumeState struct {
	name   string
	src    source
	path   string
	ready  bool
	srcErr error
	// lastErr is the last failure reported (events and logs are written
	// again only when it changes).
	lastErr string
}

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.RefreshPeriod <= 0 {
		opts.RefreshPeriod = time.Minute
	}
	if opts.ExpansionCheckPeriod <= 0 {
		opts.ExpansionCheckPeriod = opts.RefreshPeriod
	}
	if opts.SizeCheckPeriod <= 0 {
		opts.SizeCheckPeriod = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Recorder == nil {
		opts.Recorder = &record.FakeRecorder{}
	}
	if opts.NodeAllocatable == nil {
		opts.NodeAllocatable = func() v1.ResourceList { return nil }
	}
	m := &Manager{opts: opts, pods: map[types.UID]*podVolumes{}, dirty: map[types.UID]bool{}, kick: make(chan struct{}, 1),
		expansions: map[types.UID]map[string]*expansionState{}, expandSoon: map[types.UID]map[string]bool{}, expandKick: make(chan struct{}, 1)}
	if opts.CSIDrivers != nil {
		var tokens volcsi.TokenGetter
		if opts.Tokens != nil {
			tokens = opts.Tokens
		}
		m.csi = volcsi.New(volcsi.Options{RootDir: opts.RootDir, NodeName: opts.NodeName, Drivers: opts.CSIDrivers, API: opts.CSIAPI, Tokens: tokens})
	}
	return m
}

// VolumesInUse are the attachable volumes the node uses (the Node's
// status.volumesInUse): persistent CSI volumes of pods being set up or
// set up.
func (m *Manager) VolumesInUse() []v1.UniqueVolumeName {
	if m.csi == nil {
		return nil
	}
	return m.csi.InUse()
}

// PodDir is a pod's directory under the kubelet's root.
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.opts.RootDir, "pods", string(uid))
}

// NotReadyError lists the volumes of a pod that could not be set up.
type NotReadyError struct {
	// Volumes are the failures, by volume name.
	Volumes []VolumeError
	// RetryAfter is when to try again.
	RetryAfter time.Duration
}

// VolumeError is one volume that could not be set up.
type VolumeError struct {
	Volume string
	Type   string
	Err    error
}

func (e *NotReadyError) Error() string {
	names := make([]string, 0, len(e.Volumes))
	msgs := make([]string, 0, len(e.Volumes))
	for _, v := range e.Volumes {
		names = append(names, v.Volume)
		msgs = append(msgs, v.Err.Error())
	}
	return fmt.Sprintf("unmounted volumes=[%s]: %s", strings.Join(names, " "), strings.Join(msgs, "; "))
}

// RefusedVolumeDevices ends the error of a volume a container uses as a
// raw block device (volumeDevices).
const RefusedVolumeDevices = "is used as a raw block device (volumeDevices), which this node does not support"

// usedVolumes are the names of the volumes some container of the pod
// mounts (volumes nobody mounts are not set up, as upstream), and those
// used as raw block devices.
func usedVolumes(pod *v1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	visit := func(c *v1.Container) {
		for _, vm := range c.VolumeMounts {
			mounts[vm.Name] = true
		}
		for _, vd := range c.VolumeDevices {
			devices[vd.Name] = true
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		visit(&c)
	}
	return mounts, devices
}

func (m *Manager) podState(pod *v1.Pod) *podVolumes {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv := m.pods[pod.UID]
	if pv == nil {
		pv = &podVolumes{vols: map[string]*volumeState{}}
		m.pods[pod.UID] = pv
	}
	return pv
}

// SetUpPod prepares every volume the pod's containers use, and rewrites
// the refreshed ones from the current pod (labels and annotations for the
// downward API) and objects. It returns a *NotReadyError when a volume
// that was never set up still cannot be: the pod's containers must not
// start yet. A volume that was set up and now fails to refresh keeps its
// last content (an event and a log line say why).
func (m *Manager) SetUpPod(ctx context.Context, pod *v1.Pod) error {
	pv := m.podState(pod)
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.pod = pod
	pv.gone = false

	mounts, devices := usedVolumes(pod)
	var failed []VolumeError
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if devices[v.Name] {
			failed = append(failed, m.report(ctx, pod, &volumeState{name: v.Name}, TypeOf(v),
				fmt.Errorf("volume %q "+RefusedVolumeDevices, v.Name)))
		}
		if !mounts[v.Name] {
			continue
		}
		vs := pv.vols[v.Name]
		if vs == nil {
			vs = &volumeState{name: v.Name}
			vs.src, vs.srcErr = newSource(pod, v)
			pv.vols[v.Name] = vs
			m.warnIgnoredFields(ctx, pod, v)
		}
		if vs.srcErr != nil {
			failed = append(failed, m.report(ctx, pod, vs, TypeOf(v), vs.srcErr))
			continue
		}
		if vs.ready && !vs.src.refreshed() {
			continue
		}
		if err := m.setUpVolume(ctx, pod, vs); err != nil {
			if !vs.ready {
				// Content written before a kubelet restart is kept, as
				// for any volume that fails to refresh.
				if dir, ok := m.writtenBefore(pod, vs); ok {
					vs.ready, vs.path = true, dir
				}
			}
			if vs.ready {
				m.reportRefresh(ctx, pod, vs, err)
				continue
			}
			failed = append(failed, m.report(ctx, pod, vs, vs.src.kind(), fmt.Errorf("volume %q (%s): %w", vs.name, vs.src.describe(), err)))
			continue
		}
		if vs.lastErr != "" && !vs.ready {
			klog.FromContext(ctx).Info("Volume ready", "pod", klog.KObj(pod), "volume", vs.name, "type", vs.src.kind())
		}
		if c, ok := vs.src.(*claim); ok && c.csi != nil && !vs.ready {
			// A claim grown while the volume was not mounted (or
			// while the kubelet was down) is expanded now.
			m.kickExpansion(pod.UID, vs.name)
		}
		vs.ready, vs.lastErr = true, ""
	}
	m.recordClaims(pod.UID, pv)
	if len(failed) == 0 {
		pv.failures = 0
		return nil
	}
	pv.failures++
	return &NotReadyError{Volumes: failed, RetryAfter: retryDelay(pv.failures)}
}

// retryDelay grows 1s, 2s, 4s, 8s, then stays at 10s: object changes
// retry at once (see ObjectChanged), so the delay only bounds the wait for
// what is polled (a PersistentVolumeClaim being bound).
func retryDelay(failures int) time.Duration {
	d := time.Second << min(failures-1, 4)
	return min(d, 10*time.Second)
}

func (m *Manager) setUpVolume(ctx context.Context, pod *v1.Pod, vs *volumeState) error {
	s := &setup{m: m, pod: pod, name: vs.name, first: !vs.ready}
	if dir := vs.src.pluginDir(); dir != "" {
		s.dir = filepath.Join(m.PodDir(pod.UID), "volumes", dir, vs.name)
		s.metaDir = filepath.Join(m.PodDir(pod.UID), "plugins", dir, vs.name)
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		s.fsGroup, s.fsGroupPolicy = sc.FSGroup, sc.FSGroupChangePolicy
	}
	s.fsUser = fsUser(pod)
	p, err := vs.src.setUp(ctx, s)
	if err != nil {
		return err
	}
	vs.path = p
	return nil
}

// writtenBefore reports whether a refreshed volume has content published
// before (by an earlier kubelet run), and where.
func (m *Manager) writtenBefore(pod *v1.Pod, vs *volumeState) (string, bool) {
	if !vs.src.refreshed() || vs.src.pluginDir() == "" {
		return "", false
	}
	dir := filepath.Join(m.PodDir(pod.UID), "volumes", vs.src.pluginDir(), vs.name)
	if _, err := os.Lstat(filepath.Join(dir, atomicwriter.DataLink)); err != nil {
		return "", false
	}
	return dir, true
}

// report records a volume that keeps the pod waiting: an event and a log
// line when the reason is new, and returns it.
func (m *Manager) report(ctx context.Context, pod *v1.Pod, vs *volumeState, typ string, err error) VolumeError {
	msg := err.Error()
	if msg != vs.lastErr {
		vs.lastErr = msg
		klog.FromContext(ctx).Info("Volume not ready; the pod waits", "pod", klog.KObj(pod), "volume", vs.name, "type", typ, "reason", msg)
		var unsupported *UnsupportedError
		if errors.As(err, &unsupported) {
			m.opts.Recorder.Event(pod, v1.EventTypeWarning, EventFailedMount, msg)
		} else if inner := errors.Unwrap(err); inner != nil {
			m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, EventFailedMount, "MountVolume.SetUp failed for volume %q : %v", vs.name, inner)
		} else {
			m.opts.Recorder.Event(pod, v1.EventTypeWarning, EventFailedMount, msg)
		}
	} else {
		klog.FromContext(ctx).V(3).Info("Volume still not ready", "pod", klog.KObj(pod), "volume", vs.name, "reason", msg)
	}
	return VolumeError{Volume: vs.name, Type: typ, Err: err}
}

// reportRefresh records a failed rewrite of a volume that was set up.
func (m *Manager) reportRefresh(ctx context.Context, pod *v1.Pod, vs *volumeState, err error) {
	msg := err.Error()
	if msg == vs.lastErr {
		klog.FromContext(ctx).V(3).Info("Volume refresh still failing", "pod", klog.KObj(pod), "volume", vs.name, "err", msg)
		return
	}
	vs.lastErr = msg
	klog.FromContext(ctx).Info("Volume refresh failed; keeping its last content", "pod", klog.KObj(pod), "volume", vs.name, "type", vs.src.kind(), "err", msg)
	m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, EventFailedMount, "MountVolume.SetUp failed for volume %q : %v", vs.name, err)
}

// Ready reports whether every volume the pod's containers use is set up.
func (m *Manager) Ready(uid types.UID) bool {
	m.mu.Lock()
	pv := m.pods[uid]
	m.mu.Unlock()
	if pv == nil {
		return false
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	for _, vs := range pv.vols {
		if !vs.ready {
			return false
		}
	}
	return pv.failures == 0
}

// TearDownPod unmounts and removes the pod's volumes: subPath bind mounts,
// tmpfs mounts and the volume directories (emptyDir content is lost, as
// upstream). hostPath and PersistentVolume data is never touched. It works
// from the directories, so it also cleans up after a restart.
func (m *Manager) TearDownPod(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	pv := m.pods[uid]
	delete(m.pods, uid)
	delete(m.dirty, uid)
	m.mu.Unlock()
	m.forgetClaims(uid)
	m.forgetExpansions(uid)
	if m.opts.PodCertificates != nil {
		m.opts.PodCertificates.ForgetPod(uid)
	}
	if pv != nil {
		pv.mu.Lock()
		defer pv.mu.Unlock()
		pv.gone = true
	}
	dir := m.PodDir(uid)
	var errs []error
	if err := subpath.CleanPod(dir); err != nil {
		errs = append(errs, err)
	}
	// CSI volumes go through their drivers first (unpublish, unstage),
	// once no subPath mount holds them. One that cannot go keeps its
	// directory, so the next try finds it; the pod's other volumes go
	// anyway.
	csiDone := m.csi == nil
	if !csiDone && len(errs) == 0 {
		if err := m.csi.TearDownPod(ctx, uid); err != nil {
			errs = append(errs, err)
		} else {
			csiDone = true
		}
	}
	if csiDone {
		for _, d := range []string{"volumes", "plugins"} {
			if err := hostfs.RemoveAll(filepath.Join(dir, d)); err != nil {
				errs = append(errs, err)
			}
		}
	} else {
		entries, _ := os.ReadDir(filepath.Join(dir, "volumes"))
		for _, e := range entries {
			if e.Name() == volcsi.PodPluginDir {
				continue
			}
			if err := hostfs.RemoveAll(filepath.Join(dir, "volumes", e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
		if err := hostfs.RemoveAll(filepath.Join(dir, "plugins")); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tearing down the volumes of pod %s: %w", uid, err)
	}
	klog.FromContext(ctx).V(2).Info("Pod volumes torn down", "podUID", uid)
	return nil
}

// RemovePodDir tears the pod's volumes down and removes its directory.
func (m *Manager) RemovePodDir(ctx context.Context, uid types.UID) error {
	if err := podspec.UIDPathElement(string(uid)); err != nil {
		// Never a RemoveAll of pods/../.. or of pods/ itself: admission
		// refuses such pods, so none has a directory of its own.
		return fmt.Errorf("not removing the directory of pod UID %q: %w", uid, err)
	}
	if err := m.TearDownPod(ctx, uid); err != nil {
		return err
	}
	return hostfs.RemoveAll(m.PodDir(uid))
}

// CleanupOrphans removes the directories (volumes first) of pods that
// keep does not claim: pods deleted while the kubelet was down, or whose
// removal failed. Call it only once every pod source has reported, or
// live pods would lose their volumes.
func (m *Manager) CleanupOrphans(ctx context.Context, keep func(types.UID) bool) {
	entries, err := os.ReadDir(filepath.Join(m.opts.RootDir, "pods"))
	if err != nil {
		return
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if !e.IsDir() || keep(uid) {
			continue
		}
		m.mu.Lock()
		_, known := m.pods[uid]
		m.mu.Unlock()
		if known {
			continue
		}
		if err := m.RemovePodDir(ctx, uid); err != nil {
			klog.FromContext(ctx).Error(err, "Removing the directory of an orphaned pod", "podUID", uid)
			continue
		}
		klog.FromContext(ctx).Info("Removed the directory of an orphaned pod", "podUID", uid)
	}
}

// ObjectChanged is called when a ConfigMap or Secret changed: the pods
// that show it in a volume are rewritten now, and those still waiting for
// it are synced again.
func (m *Manager) ObjectChanged(ref objects.Ref) {
	// Never hold m.mu while waiting for a pod: its set-up may be waiting
	// for the API server.
	m.mu.Lock()
	pods := make(map[types.UID]*podVolumes, len(m.pods))
	for uid, pv := range m.pods {
		pods[uid] = pv
	}
	m.mu.Unlock()
	m.sourceChanged(pods, func(pod *v1.Pod) bool { return volumesReference(pod, ref) })
}

// PodCredentialChanged rewrites the volumes of a pod whose podCertificate
// credential was issued or renewed, or resyncs it while it waits for one.
func (m *Manager) PodCredentialChanged(uid types.UID) {
	m.mu.Lock()
	pv := m.pods[uid]
	m.mu.Unlock()
	if pv == nil {
		return
	}
	m.sourceChanged(map[types.UID]*podVolumes{uid: pv}, func(*v1.Pod) bool { return true })
}

// sourceChanged marks the pods among pods whose volumes use a changed
// source: a ready pod's volumes are rewritten, a waiting pod is resynced.
func (m *Manager) sourceChanged(pods map[types.UID]*podVolumes, uses func(*v1.Pod) bool) {
	var resync, dirty []types.UID
	for uid, pv := range pods {
		pv.mu.Lock()
		pod, ready := pv.pod, pv.failures == 0
		pv.mu.Unlock()
		switch {
		case pod == nil || !uses(pod):
		case ready:
			dirty = append(dirty, uid)
		default:
			resync = append(resync, uid)
		}
	}
	m.mu.Lock()
	for _, uid := range dirty {
		m.dirty[uid] = true
	}
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
	if m.opts.Resync != nil {
		for _, uid := range resync {
			m.opts.Resync(uid)
		}
	}
}

// volumesReference reports whether a volume of pod shows the object. Any
// ClusterTrustBundle may concern a pod that projects one: a bundle joins
// or leaves a signer's selection by its labels.
func volumesReference(pod *v1.Pod, ref objects.Ref) bool {
	if ref.Kind == objects.ClusterTrustBundle {
		return projects(pod, func(s *v1.VolumeProjection) bool { return s.ClusterTrustBundle != nil })
	}
	if pod.Namespace != ref.Namespace {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			if ref.Kind == objects.ConfigMap && v.ConfigMap.Name == ref.Name {
				return true
			}
		case v.Secret != nil:
			if ref.Kind == objects.Secret && v.Secret.SecretName == ref.Name {
				return true
			}
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if (s.ConfigMap != nil && ref.Kind == objects.ConfigMap && s.ConfigMap.Name == ref.Name) ||
					(s.Secret != nil && ref.Kind == objects.Secret && s.Secret.Name == ref.Name) {
					return true
				}
			}
		}
	}
	return false
}

// projects reports whether a projected volume of pod has a source that
// is.
func projects(pod *v1.Pod, is func(*v1.VolumeProjection) bool) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for i := range v.Projected.Sources {
			if is(&v.Projected.Sources[i]) {
				return true
			}
		}
	}
	return false
}

// Start rewrites refreshed volumes: those whose objects changed at once,
// all of them every RefreshPeriod. It returns nil when ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	tick := m.opts.Clock.NewTicker(m.opts.RefreshPeriod)
	defer tick.Stop()
	sizes := m.opts.Clock.NewTicker(m.opts.SizeCheckPeriod)
	defer sizes.Stop()
	if m.csi != nil {
		// Node expansions call drivers (bounded, but long): apart from
		// the refreshes.
		go m.expansionLoop(ctx)
	}
	for {
		var uids []types.UID
		select {
		case <-ctx.Done():
			return nil
		case <-sizes.C():
			m.CheckSizeLimits(ctx)
			continue
		case <-m.kick:
			m.mu.Lock()
			for uid := range m.dirty {
				uids = append(uids, uid)
			}
			m.dirty = map[types.UID]bool{}
			m.mu.Unlock()
		case <-tick.C():
			m.mu.Lock()
			for uid := range m.pods {
				uids = append(uids, uid)
			}
			m.dirty = map[types.UID]bool{}
			m.mu.Unlock()
		}
		sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
		for _, uid := range uids {
			if ctx.Err() != nil {
				return nil
			}
			m.refreshPod(ctx, uid)
		}
	}
}

// refreshPod rewrites the pod's refreshed volumes that are set up.
func (m *Manager) refreshPod(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	pv := m.pods[uid]
	m.mu.Unlock()
	if pv == nil {
		return
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.gone || pv.pod == nil {
		return
	}
	names := make([]string, 0, len(pv.vols))
	for n := range pv.vols {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		vs := pv.vols[n]
		if !vs.ready || !vs.src.refreshed() {
			continue
		}
		if err := m.setUpVolume(ctx, pv.pod, vs); err != nil {
			m.reportRefresh(ctx, pv.pod, vs, err)
			continue
		}
		vs.lastErr = ""
	}
}

// CheckSizeLimits measures the disk-backed emptyDirs that have a
// sizeLimit and evicts each pod whose volume grew past it, as upstream's
// eviction manager does (memory-backed ones are bounded by their tmpfs).
func (m *Manager) CheckSizeLimits(ctx context.Context) {
	m.mu.Lock()
	pods := make(map[types.UID]*podVolumes, len(m.pods))
	for uid, pv := range m.pods {
		pods[uid] = pv
	}
	m.mu.Unlock()
	for uid, pv := range pods {
		pv.mu.Lock()
		type limited struct {
			name, path string
			limit      *resource.Quantity
		}
		var check []limited
		if !pv.gone && !pv.evicted {
			for name, vs := range pv.vols {
				if e, ok := vs.src.(*emptyDir); ok && vs.ready && e.diskLimit() != nil {
					check = append(check, limited{name, vs.path, e.diskLimit()})
				}
			}
		}
		pv.mu.Unlock()
		for _, c := range check {
			used, err := hostfs.DiskUsage(c.path)
			if err != nil {
				klog.FromContext(ctx).V(2).Info("Measuring an emptyDir failed", "podUID", uid, "volume", c.name, "err", err)
				continue
			}
			if used <= c.limit.Value() {
				continue
			}
			msg := fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", c.name, c.limit.String())
			klog.FromContext(ctx).Info("Evicting a pod: emptyDir over its sizeLimit", "podUID", uid, "volume", c.name, "used", used, "limit", c.limit.String())
			pv.mu.Lock()
			pv.evicted = true
			pv.mu.Unlock()
			if m.opts.Evict != nil {
				m.opts.Evict(uid, msg)
				metrics.Evictions.WithLabelValues(metrics.EvictionSignalEmptyDirFsLimit).Inc()
			}
			break
		}
	}
}
