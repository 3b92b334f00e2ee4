package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/pod/hooks"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
	"github.com/gokubelet/kubelet/pkg/runtime/backoff"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
	"github.com/gokubelet/kubelet/pkg/runtime/images/pullrecords"
	"github.com/gokubelet/kubelet/pkg/runtime/instrumented"
	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
)

// Cgroup drivers.
const (
	CgroupDriverCgroupfs = "cgroupfs"
	CgroupDriverSystemd  = "systemd"
)

// ContainerOptions is what other parts of the kubelet add to a container
// before it is created: resolved environment (from ConfigMaps, Secrets, the
// downward API) and volume mounts.
type ContainerOptions struct {
	// Env replaces the container's env when non-nil: every variable, in
	// order, already resolved. When nil, only literal env values are used.
	Env    []v1.EnvVar
	Mounts []*runtimeapi.Mount
	// PluginEnv, Devices, CDIDevices and Annotations come from device
	// plugins (their Allocate answers). PluginEnv goes before the
	// container's own env, which wins over it; the kubelet's own
	// annotations win over Annotations.
	PluginEnv   []*runtimeapi.KeyValue
	Devices     []*runtimeapi.Device
	CDIDevices  []*runtimeapi.CDIDevice
	Annotations map[string]string
}

// ContainerOptionsFunc produces ContainerOptions for one container. An error
// makes the container wait with CreateContainerConfigError.
type ContainerOptionsFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container) (ContainerOptions, error)

// Options configure a Manager.
type Options struct {
	// RuntimeEndpoint and ImageEndpoint are CRI sockets
	// (unix:///run/containerd/containerd.sock). ImageEndpoint defaults to
	// RuntimeEndpoint.
	RuntimeEndpoint string
	ImageEndpoint   string
	// RuntimeRequestTimeout bounds each CRI call (default 2m).
	RuntimeRequestTimeout time.Duration

	// RootDir is the kubelet's state directory (default /var/lib/kubelet);
	// termination message files live under it.
	RootDir string
	// PodLogsDir is where container logs go (default /var/log/pods).
	PodLogsDir string
	// ContainerLogSymlinkDir gets a link to each container's log, named as
	// upstream names it (default /var/log/containers; "-" for none).
	ContainerLogSymlinkDir string

	// CgroupDriver is cgroupfs (default) or systemd; CgroupRoot is the root
	// the kubepods hierarchy hangs from (default /).
	CgroupDriver string
	CgroupRoot   string
	// CgroupParent, when set, names each pod's cgroup parent (the cgroup
	// manager's PodParent); else CgroupParent of the driver and root.
	CgroupParent func(*v1.Pod) string

	// ResolvConf is the host resolver file pods inherit (DNSPolicy Default,
	// and ClusterFirst without cluster DNS); "" means none: such pods get
	// the node's loopback resolver, as upstream. ClusterDNS and
	// ClusterDomain are the kubelet's clusterDNS and clusterDomain (no
	// default, as upstream).
	ResolvConf    string
	ClusterDNS    []string
	ClusterDomain string

	// NodeName is the node's name (for logs and events).
	NodeName string

	// MachineMemoryCapacity (bytes) sizes the OOM score of burstable pods;
	// read from /proc/meminfo when 0.
	MachineMemoryCapacity int64

	Recorder              record.EventRecorder
	SerializeImagePulls   bool
	MaxParallelImagePulls int
	PullCredentials       images.Credentials
	Clock                 clock.Clock

	// PullRecords, when set, keeps what pulled each image and checks an
	// image already present against the pod's credentials
	// (KubeletEnsureSecretPulledImages); nil: any pod uses a present image.
	PullRecords *pullrecords.Manager

	// ContainerOptions, when set, is called before each container is
	// created.
	ContainerOptions ContainerOptionsFunc

	// PrepareResources, when set, is called before a pod's sandbox is
	// created (DRA: the pod's ResourceClaims are prepared). An error
	// leaves the pod waiting, its containers ContainerCreating with the
	// error as message, and an event FailedPrepareDynamicResources. When
	// it is not set, pods with ResourceClaims are refused with a reason.
	PrepareResources func(ctx context.Context, pod *v1.Pod) error

	// Mounts gives each container's volume mounts (the volume manager's
	// ContainerMounts). Without it, a container with volumeMounts waits
	// with CreateContainerConfigError.
	Mounts container.MountsFunc
	// VolumeDir finds a pod volume's directory for env vars read from a
	// file in it (valueFrom.fileKeyRef); nil refuses them (EnvFiles off).
	VolumeDir container.VolumeDirFunc

	// Actuated records what each container was last given; with it,
	// SyncPod resizes running containers whose allocation changed (see
	// resize.go). PodCgroup applies a pod's (new) limits to its cgroup.
	Actuated  ActuatedResources
	PodCgroup func(*v1.Pod) error

	// Liveness, when set, tells SyncPod which running containers failed
	// their liveness or startup probe: they are killed and restarted by the
	// restart policy (see ComputePodActions).
	Liveness LivenessFunc
	// Started, when set, tells whether a running container's startup probe
	// has succeeded: the init container after a sidecar with a startup
	// probe waits for it. Without it a running sidecar counts as started.
	Started StartedFunc

	// The rest of the pod spec (see podspec_deps.go): what container
	// environments, DNS, security contexts, hooks and RuntimeClasses need
	// from outside the runtime. All optional.
	PodSpec PodSpecDeps

	// StartGate, when set, bounds the sandboxes and containers the
	// runtime is asked to start at once, oldest pod first (package
	// startgate). Nil asks for every start at once.
	StartGate *startgate.Gate

	// CRIObserver, when set, hears about the CRI calls of pod starts (the
	// pod startup timeline). Every CRI call is counted in the runtime
	// operation metrics either way (package instrumented).
	CRIObserver instrumented.Observer
}

func (o *Options) setDefaults() {
	if o.RuntimeRequestTimeout == 0 {
		o.RuntimeRequestTimeout = 2 * time.Minute
	}
	if o.ImageEndpoint == "" {
		o.ImageEndpoint = o.RuntimeEndpoint
	}
	if o.RootDir == "" {
		o.RootDir = "/var/lib/kubelet"
	}
	if o.PodLogsDir == "" {
		o.PodLogsDir = "/var/log/pods"
	}
	switch o.ContainerLogSymlinkDir {
	case "":
		o.ContainerLogSymlinkDir = DefaultContainerLogSymlinkDir
	case "-":
		o.ContainerLogSymlinkDir = ""
	}
	if o.CgroupDriver == "" {
		o.CgroupDriver = CgroupDriverCgroupfs
	}
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/"
	}
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.MachineMemoryCapacity == 0 {
		o.MachineMemoryCapacity = readMemTotal()
	}
}

// Manager is the CRI runtime manager. It implements container.Runtime.
type Manager struct {
	opts    Options
	runtime cri.RuntimeService
	image   cri.ImageManagerService
	puller  *images.Puller
	crash   *flowcontrol.Backoff
	clock   clock.Clock

	runtimeName string
	// runtimeVersion is the runtime's version at start (image volumes need
	// containerd 2.1 or later).
	runtimeVersion string

	// hooks runs postStart and preStop handlers; secOpts are the host
	// facts of the security context mapping.
	hooks   *hooks.Runner
	secOpts securitycontext.Options
	// features caches what the runtime reports it supports.
	features runtimeFeatures

	cacheMu      sync.Mutex
	ctrCache     map[string]cachedContainer
	sandboxCache map[string]cachedSandbox
}

var _ container.Runtime = (*Manager)(nil)

// New connects to the CRI endpoints in o and returns a Manager.
func New(ctx context.Context, o Options) (*Manager, error) {
	if o.RuntimeEndpoint == "" {
		return nil, fmt.Errorf("kuberuntime: RuntimeEndpoint is required")
	}
	o.setDefaults()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(o.RuntimeEndpoint).WithConnectionTimeout(o.RuntimeRequestTimeout).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI runtime %s: %w", o.RuntimeEndpoint, err)
	}
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(o.ImageEndpoint).WithConnectionTimeout(o.RuntimeRequestTimeout).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to CRI image service %s: %w", o.ImageEndpoint, err)
	}
	return NewWithServices(ctx, instrumented.RuntimeService(rs, o.CRIObserver), instrumented.ImageService(is, o.CRIObserver), o)
}

// NewWithServices returns a Manager over already-built CRI services (the
// fakes in k8s.io/cri-api/pkg/apis/testing in tests). The endpoints in o are
// ignored. It asks the runtime for its version to check that it answers.
func NewWithServices(ctx context.Context, rs cri.RuntimeService, is cri.ImageManagerService, o Options) (*Manager, error) {
	o.setDefaults()
	m := &Manager{
		opts:         o,
		runtime:      detached{rs},
		image:        is,
		clock:        o.Clock,
		crash:        backoff.New(backoff.CrashLoop, o.Clock),
		ctrCache:     map[string]cachedContainer{},
		sandboxCache: map[string]cachedSandbox{},
	}
	m.hooks = hooks.NewRunner(prober.CRIExec(rs), o.Recorder, "kube-lifecycle/"+userAgentVersion)
	m.secOpts = securitycontext.Options{
		SeccompProfileRoot: filepath.Join(o.RootDir, "seccomp"),
		SeccompDefault:     o.PodSpec.SeccompDefault,
		MaskedPaths:        securitycontext.HostMaskedPaths(),
	}
	m.puller = images.NewPuller(images.Options{Service: is, Recorder: o.Recorder, Clock: o.Clock,
		Serialize: o.SerializeImagePulls, MaxParallel: o.MaxParallelImagePulls, Credentials: o.PullCredentials,
		Records: o.PullRecords})
	v, err := rs.Version(ctx, "v1")
	if err != nil {
		return nil, fmt.Errorf("CRI runtime does not answer Version: %w", err)
	}
	m.runtimeName, m.runtimeVersion = v.RuntimeName, v.RuntimeVersion
	klog.FromContext(ctx).Info("Connected to container runtime", "runtime", v.RuntimeName, "version", v.RuntimeVersion, "criVersion", v.RuntimeApiVersion)
	return m, nil
}

// Type implements container.Runtime.
func (m *Manager) Type() string { return m.runtimeName }

// Version implements container.Runtime.
func (m *Manager) Version(ctx context.Context) (string, error) {
	v, err := m.runtime.Version(ctx, "v1")
	if err != nil {
		return "", err
	}
	return v.RuntimeVersion, nil
}

// RuntimeService exposes the CRI runtime client (for streaming, stats).
func (m *Manager) RuntimeService() cri.RuntimeService { return m.runtime }

// LogSymlinkDir is where containers' logs are linked ("" when they are not),
// for the container GC to clean.
func (m *Manager) LogSymlinkDir() string { return m.opts.ContainerLogSymlinkDir }

// ImageService exposes the CRI image client (for image GC).
func (m *Manager) ImageService() cri.ImageManagerService { return m.image }

// CrashBackoff exposes the container restart back-off (for GC or tests).
func (m *Manager) CrashBackoff() *flowcontrol.Backoff { return m.crash }

// OnlyDeferred reports whether r holds nothing but deferred steps (crash or
// image-pull back-off): the runtime did not change, so the caller should
// retry after the back-off instead of re-inspecting at once.
func OnlyDeferred(r container.SyncResult) bool {
	for _, s := range r.Steps {
		if s.Reason != ReasonCrashLoopBackOff && s.Reason != images.ReasonImagePullBackOff {
			return false
		}
	}
	return len(r.Steps) > 0
}

// WatchContainerEvents follows the runtime's CRI container event stream
// (pleg.EventSource) until it ends or ctx does. On a runtime without one
// (containerd 1.6) it ends at once with Unimplemented.
func (m *Manager) WatchContainerEvents(ctx context.Context, connected func(), event func(*runtimeapi.ContainerEventResponse)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan *runtimeapi.ContainerEventResponse, 64)
	done := make(chan error, 1)
	go func() {
		done <- m.runtime.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) { connected() })
	}()
	for {
		select {
		case e := <-ch:
			event(e)
		case err := <-done:
			for {
				select {
				case e := <-ch:
					event(e)
				default:
					return err
				}
			}
		}
	}
}
