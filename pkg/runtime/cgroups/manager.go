package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Values of enforceNodeAllocatable.
const (
	EnforcePods                       = "pods"
	EnforceKubeReserved               = "kube-reserved"
	EnforceSystemReserved             = "system-reserved"
	EnforceKubeReservedCompressible   = "kube-reserved-compressible"
	EnforceSystemReservedCompressible = "system-reserved-compressible"
	EnforceNone                       = "none"
)

// ResourcePID is the node's internal pid capacity and reservation name, as
// upstream's kubeReserved/systemReserved accept it.
const ResourcePID v1.ResourceName = "pid"

// qosUpdatePeriod is how often the burstable level's shares are brought in
// line with the pods (upstream: every minute, and when a pod starts).
const qosUpdatePeriod = time.Minute

// podCgroupMinAge protects pod cgroups being set up from the orphan sweep:
// another kubelet sharing the hierarchy (a drop-in handover) may be
// creating one right now, and its sandbox follows within seconds.
const podCgroupMinAge = 10 * time.Second

// Config is the node's cgroup configuration (KubeletConfiguration fields).
type Config struct {
	// Driver is cgroupDriver; Root is cgroupRoot; PerQOS is cgroupsPerQOS.
	Driver string
	Root   string
	PerQOS bool
	// Enforce is enforceNodeAllocatable.
	Enforce []string
	// KubeReserved and SystemReserved with the cgroups they are enforced on
	// (kubeReservedCgroup, systemReservedCgroup).
	KubeReserved         v1.ResourceList
	SystemReserved       v1.ResourceList
	KubeReservedCgroup   string
	SystemReservedCgroup string
	// Pod is what shapes each pod's cgroup.
	Pod PodOptions
}

// Manager keeps the node's hierarchy: node allocatable on kubepods, the QoS
// levels, the pods' cgroups.
type Manager struct {
	cfg Config
	d   Driver
	h   Hierarchy

	// ActivePods, set before Start, lists the pods that run or may run,
	// for the burstable level's shares.
	ActivePods func() []*v1.Pod

	mu              sync.Mutex
	burstableShares uint64
	allocatable     *Resources
	allocatableOK   bool
}

// New detects the cgroup layout and returns a manager with the configured
// driver.
func New(cfg Config) (*Manager, error) {
	l, err := Detect()
	if err != nil {
		return nil, err
	}
	var d Driver
	if cfg.Driver == DriverSystemd {
		if d, err = NewSystemd(l); err != nil {
			return nil, err
		}
	} else {
		d = NewCgroupfs(l)
	}
	return NewWithDriver(cfg, Instrumented(d)), nil
}

// NewWithDriver returns a manager over d (tests use a cgroupfs driver on a
// temporary directory).
func NewWithDriver(cfg Config, d Driver) *Manager {
	return &Manager{cfg: cfg, d: d, h: Hierarchy{Root: ParseRoot(cfg.Root, cfg.Driver), PerQOS: cfg.PerQOS}}
}

// Driver is the driver in use.
func (m *Manager) Driver() Driver { return m.d }

// Hierarchy names the levels.
func (m *Manager) Hierarchy() Hierarchy { return m.h }

func (m *Manager) enforces(key string) bool {
	for _, k := range m.cfg.Enforce {
		if k == key {
			return true
		}
	}
	return false
}

// NodeAllocatable is what the kubepods cgroup is limited to: capacity less
// kubeReserved and systemReserved when pods are enforced, else capacity.
// The hard eviction thresholds are not taken off: pods are evicted before
// they reach this limit.
func (m *Manager) NodeAllocatable(capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, c := range capacity {
		v := c.DeepCopy()
		if m.enforces(EnforcePods) {
			if r, ok := m.cfg.KubeReserved[name]; ok {
				v.Sub(r)
			}
			if r, ok := m.cfg.SystemReserved[name]; ok {
				v.Sub(r)
			}
		}
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, c.Format)
		}
		out[name] = v
	}
	return out
}

// Setup creates the hierarchy: kubepods with node allocatable (from the
// machine's capacity: cpu, memory, and pid), the burstable and besteffort
// levels, and enforces the reservations on their cgroups when configured.
// A limit the kernel refuses (kubepods already using more memory than the
// new limit) is reported and retried by Start, not fatal.
func (m *Manager) Setup(ctx context.Context, capacity v1.ResourceList) error {
	log := klog.FromContext(ctx)
	if !m.cfg.PerQOS {
		log.Info("cgroupsPerQOS is false: no kubepods hierarchy and no pod cgroups; pods run in cgroupRoot", "cgroupRoot", m.h.Root.Path(m.d.Name()))
		return nil
	}
	alloc := m.NodeAllocatable(capacity)
	var pids int64
	if q, ok := alloc[ResourcePID]; ok {
		pids = q.Value()
	}
	r := ForNode(alloc, pids)
	m.mu.Lock()
	m.allocatable = r
	m.mu.Unlock()
	if err := m.d.Ensure(m.h.Kubepods(), &Resources{}); err != nil {
		return fmt.Errorf("creating the node allocatable cgroup %s: %w", m.h.Kubepods().Path(m.d.Name()), err)
	}
	m.enforceAllocatable(ctx)
	min := uint64(MinShares)
	if err := m.d.Ensure(m.h.QOS(v1.PodQOSBestEffort), &Resources{CPUShares: &min}); err != nil {
		return fmt.Errorf("creating the besteffort QoS cgroup: %w", err)
	}
	if err := m.d.Ensure(m.h.QOS(v1.PodQOSBurstable), &Resources{}); err != nil {
		return fmt.Errorf("creating the burstable QoS cgroup: %w", err)
	}
	for _, e := range []struct {
		key, keyCompressible, cgroup string
		reserved                     v1.ResourceList
	}{
		{EnforceSystemReserved, EnforceSystemReservedCompressible, m.cfg.SystemReservedCgroup, m.cfg.SystemReserved},
		{EnforceKubeReserved, EnforceKubeReservedCompressible, m.cfg.KubeReservedCgroup, m.cfg.KubeReserved},
	} {
		full, comp := m.enforces(e.key), m.enforces(e.keyCompressible)
		if !full && !comp {
			continue
		}
		n := ParseRoot(e.cgroup, m.cfg.Driver)
		if e.cgroup == "" || !m.d.Exists(n) {
			return fmt.Errorf("enforceNodeAllocatable has %q but its cgroup %q does not exist", e.key, e.cgroup)
		}
		if err := m.d.Set(n, ForReserved(e.reserved, comp && !full)); err != nil {
			return fmt.Errorf("enforcing %s on cgroup %s: %w", e.key, e.cgroup, err)
		}
		log.Info("Enforced the reservation on its cgroup", "enforce", e.key, "cgroup", e.cgroup, "reserved", e.reserved)
	}
	log.Info("Cgroup hierarchy ready", "driver", m.d.Name(), "version", m.d.Version().String(),
		"kubepods", m.h.Kubepods().Path(m.d.Name()), "enforceNodeAllocatable", m.cfg.Enforce, "allocatable", alloc)
	return nil
}

// enforceAllocatable writes node allocatable on kubepods, remembering
// whether it took.
func (m *Manager) enforceAllocatable(ctx context.Context) {
	m.mu.Lock()
	r, done := m.allocatable, m.allocatableOK
	m.mu.Unlock()
	if r == nil || done {
		return
	}
	err := m.d.Set(m.h.Kubepods(), r)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to update Node Allocatable limits; retrying every minute", "cgroup", m.h.Kubepods().Path(m.d.Name()))
		return
	}
	m.mu.Lock()
	m.allocatableOK = true
	m.mu.Unlock()
}

// Start keeps the burstable level's shares in line with the pods and
// retries a node allocatable limit the kernel refused, every minute.
func (m *Manager) Start(ctx context.Context) error {
	if !m.cfg.PerQOS {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(qosUpdatePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			m.enforceAllocatable(ctx)
			if m.ActivePods != nil {
				if err := m.UpdateQOS(m.ActivePods()); err != nil {
					klog.FromContext(ctx).Info("Failed to update the QoS cgroups", "err", err)
				}
			}
		}
	}
}

// UpdateQOS sets the burstable level's cpu.shares to the sum of the
// burstable pods' CPU requests (a write only when it changed).
func (m *Manager) UpdateQOS(pods []*v1.Pod) error {
	if !m.cfg.PerQOS {
		return nil
	}
	shares := BurstableShares(pods)
	m.mu.Lock()
	same := shares == m.burstableShares
	m.mu.Unlock()
	if same {
		return nil
	}
	if err := m.d.Set(m.h.QOS(v1.PodQOSBurstable), &Resources{CPUShares: &shares}); err != nil {
		return err
	}
	m.mu.Lock()
	m.burstableShares = shares
	m.mu.Unlock()
	return nil
}

// PodParent is the cgroup parent the runtime creates the pod's sandbox and
// containers under, in the driver's spelling.
func (m *Manager) PodParent(pod *v1.Pod) string {
	n, _ := m.h.Pod(pod)
	return n.Path(m.d.Name())
}

// PodCgroup is the pod's own cgroup, in the driver's spelling, and false
// when pods have none (cgroupsPerQOS off: the parent is the node's root,
// whose usage is not the pod's).
func (m *Manager) PodCgroup(pod *v1.Pod) (string, bool) {
	n, ok := m.h.Pod(pod)
	return n.Path(m.d.Name()), ok
}

// PodExists reports whether the pod's cgroup exists (always true without
// pod cgroups).
func (m *Manager) PodExists(pod *v1.Pod) bool {
	n, ok := m.h.Pod(pod)
	return !ok || m.d.Exists(n)
}

// EnsurePod creates the pod's cgroup with its limits when it does not exist
// (one mkdir per hierarchy and a few writes) and reports whether it did.
func (m *Manager) EnsurePod(pod *v1.Pod) (bool, error) {
	n, ok := m.h.Pod(pod)
	if !ok || m.d.Exists(n) {
		return false, nil
	}
	if err := m.d.Ensure(n, ForPod(pod, m.cfg.Pod)); err != nil {
		return false, fmt.Errorf("creating the pod cgroup %s: %w", n.Path(m.d.Name()), err)
	}
	return true, nil
}

// SetPod applies the pod's (newly allocated) limits to its cgroup.
func (m *Manager) SetPod(pod *v1.Pod) error {
	n, ok := m.h.Pod(pod)
	if !ok {
		return nil
	}
	return m.d.Set(n, ForPod(pod, m.cfg.Pod))
}

// PodDir is the pod cgroup's directory for a controller ("" without pod
// cgroups or when the controller is not mounted).
func (m *Manager) PodDir(controller string, pod *v1.Pod) string {
	n, ok := m.h.Pod(pod)
	if !ok {
		return ""
	}
	return m.d.Dir(controller, n)
}

// KubepodsDir is the node allocatable cgroup's directory for a controller.
func (m *Manager) KubepodsDir(controller string) string {
	return m.d.Dir(controller, m.h.Kubepods())
}

// CleanupPods removes the empty cgroups of pods keep does not claim, in
// every hierarchy, and reports how many went. The runtime removes only its
// own cgroups below a pod's, so without this the pod levels pile up. A
// cgroup younger than podCgroupMinAge is left (it may be being set up), and one
// with a process cannot be removed.
func (m *Manager) CleanupPods(keep func(types.UID) bool) int {
	removed := 0
	now := time.Now()
	for _, parent := range m.h.PodParents() {
		for _, base := range m.d.Children(parent) {
			uid, ok := PodUID(base, m.d.Name())
			if !ok || keep(uid) {
				continue
			}
			n := parent.Child(podPrefix + string(uid))
			if dir := firstDir(m.d, n); dir != "" {
				if info, err := os.Stat(dir); err == nil && now.Sub(info.ModTime()) < podCgroupMinAge {
					continue
				}
			}
			if err := m.d.Remove(n); err == nil {
				removed++
			} else if !errors.Is(err, os.ErrNotExist) {
				klog.V(4).Info("Pod cgroup not removed", "cgroup", n.Path(m.d.Name()), "err", err)
			}
		}
	}
	return removed
}

func firstDir(d Driver, n Name) string {
	for _, c := range []string{"memory", "cpu", "pids"} {
		if dir := d.Dir(c, n); dir != "" {
			return dir
		}
	}
	return ""
}
