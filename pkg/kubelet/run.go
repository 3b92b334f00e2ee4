package kubelet

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/engine/virtual/nodeset"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/node/objects"
	"github.com/gokubelet/kubelet/pkg/node/podcerts"
	"github.com/gokubelet/kubelet/pkg/plugins/devices"
	"github.com/gokubelet/kubelet/pkg/plugins/dra"
	"github.com/gokubelet/kubelet/pkg/pod/allocation"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
	"github.com/gokubelet/kubelet/pkg/pod/source/file"
	"github.com/gokubelet/kubelet/pkg/pod/source/url"
	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/stats"
	"github.com/gokubelet/kubelet/pkg/volume"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// Run assembles the node from the settings and runs it until ctx ends or a
// part fails. Stopping leaves pods running, as upstream does: a restarted
// kubelet adopts them.
//
// Start order (each stage waits for the readiness of the one before; they
// stop in reverse):
//
//  1. core: the pod status writer and, when joined, the Node's status, its
//     lease, the mirror pod loop and the client certificate's rotation;
//  2. sources: the static pod sources, the API pod source (joined) and the
//     merger;
//  3. servers: healthz, the read-only API and the kubelet API (with the
//     serving certificate's rotation), bound before anything runs so a
//     port in use is a clear start-up failure;
//  4. plugins: the registration manager of <root-dir>/plugins_registry,
//     the node's CSINode and the pod-resources API (plugins.go);
//  5. engine: pod workers, PLEG, probers;
//  6. sync loop;
//  7. virtual nodes, when --virtual-nodes-config names any (virtual.go;
//     with realNode: false they are all that runs).
func Run(ctx context.Context, s *kubeletconfig.Settings) error {
	started := time.Now()
	setOwnOOMScoreAdj(klog.FromContext(ctx), s.Config.OOMScoreAdj) // oom.go
	if !s.RunsRealNode() {
		return runVirtualOnly(ctx, s) // virtual.go
	}
	log := klog.FromContext(ctx).WithValues("node", s.NodeName)
	ctx = klog.NewContext(ctx, log)
	cfg := s.Config

	if err := checkSwap(cfg.FailSwapOn == nil || *cfg.FailSwapOn, "/proc/swaps"); err != nil {
		return err
	}
	if err := prepareDirs(s.RootDir); err != nil {
		return err
	}
	// Volumes below the root directory may be given to containers with
	// mount propagation Bidirectional or HostToContainer, which need them
	// on a shared mount (on a host without systemd / is private).
	if changed, err := hostfs.MakeRShared(s.RootDir); err != nil {
		return fmt.Errorf("making the root directory a shared mount: %w", err)
	} else if changed {
		log.Info("Made the root directory a recursively shared mount (it stays when the kubelet exits)", "rootDir", s.RootDir)
	}
	machine, err := machineinfo.Read(s.RootDir)
	if err != nil {
		return fmt.Errorf("reading machine facts: %w", err)
	}
	for _, w := range machine.Warnings {
		log.Info("Machine fact unavailable", "detail", w)
	}
	ncfg, err := nodestatus.ConfigFrom(cfg, s.NodeName, machine.Hostname, s.NodeIPs, s.NodeLabels, Version())
	if err != nil {
		return err
	}
	hostIPs := hostIPs(s, machine)

	// Standalone or joined: the one place where the modes differ.
	var (
		clients    *node.Clients
		clientCert runnable.Runnable
	)
	if s.KubeconfigPath != "" {
		// TLS bootstrap and client certificate rotation (api.go).
		var rc *rest.Config
		rc, clientCert, err = clientIdentity(ctx, s)
		if err != nil {
			return err
		}
		clients, err = node.NewClients(node.ClientConfig{
			REST:        rc,
			Kubeconfig:  s.KubeconfigPath,
			UserAgent:   "kubelet/" + Version() + " (" + s.NodeName + ")",
			ContentType: cfg.ContentType,
			QPS:         float32(deref(cfg.KubeAPIQPS)),
			Burst:       int(cfg.KubeAPIBurst),
			EventQPS:    float32(deref(cfg.EventRecordQPS)),
			EventBurst:  int(cfg.EventBurst),
		})
		if err != nil {
			return err
		}
	}

	// The engine and the volume manager are built after the core but called
	// back by parts built before them.
	var (
		eng     *cri.Engine
		volumes *volume.Manager
	)
	facts := &hostFacts{cfg: &ncfg, rootDir: s.RootDir}
	core, err := node.New(ctx, node.Options{
		Config:                    ncfg,
		Facts:                     facts,
		Clients:                   clients,
		RegisterNode:              cfg.RegisterNode == nil || *cfg.RegisterNode,
		LeaseDurationSeconds:      cfg.NodeLeaseDurationSeconds,
		NodeStatusUpdateFrequency: cfg.NodeStatusUpdateFrequency.Duration,
		NodeStatusReportFrequency: cfg.NodeStatusReportFrequency.Duration,
		OnObjectChange:            func(r objects.Ref) { volumes.ObjectChanged(r) },
		Startup:                   &nodestatus.Startup{Boot: stats.BootTime(), KubeletStart: started},
	})
	if err != nil {
		return err
	}
	defer core.Shutdown()
	// The configuration's warnings (logged by cmd/kubelet) are events on
	// the Node too, so a cluster admin sees what the kubelet ignores.
	reportConfigWarnings(core.Recorder(), core.NodeRef(), s.Warnings)

	// Volumes: configMap, secret, projected and claim volumes need the API
	// server (standalone, such pods wait with a reason).
	var claims volume.ClaimGetter
	var claimStatus volume.ClaimStatusWriter
	var csiAPI volcsi.API
	if clients != nil {
		claims = volume.ClientClaims(clients.Kube)
		claimStatus = volume.ClientClaimStatus(clients.Kube)
		csiAPI = volcsi.ClientAPI(clients.Kube)
	}
	// The plugin surface (plugins.go): its CSI drivers are known to the
	// volumes; the pod-resources API lists the node's pods.
	var seenAllSources func() bool
	plugins := newPlugins(pluginDeps{
		rootDir: s.RootDir, nodeName: s.NodeName, client: clientOf(clients), pods: podLister{core: core},
		devices: devices.Options{
			ActivePods:   func() []*v1.Pod { return eng.UnfinishedPods() },
			SourcesReady: func() bool { return seenAllSources() },
			RunningPods:  func(ctx context.Context) (sets.Set[types.UID], error) { return runningPodUIDs(ctx, eng) },
			Changed:      core.TriggerNodeStatus,
			PodsChanged: func(uids []types.UID) {
				for _, uid := range uids {
					eng.Resync(uid)
				}
			},
			Recorder: core.Recorder(),
			NodeRef:  core.NodeRef(),
		},
		dra: dra.Options{
			ActivePods:   func() []*v1.Pod { return eng.UnfinishedPods() },
			SourcesReady: func() bool { return seenAllSources() },
			PodsChanged: func(uids []types.UID) {
				for _, uid := range uids {
					eng.Resync(uid)
				}
			},
			HealthMessages: s.Features.Enabled(features.ResourceHealthStatusMessage),
		},
	})
	var trustBundles objects.TrustBundleGetter
	if s.Features.Enabled(features.ClusterTrustBundleProjection) {
		trustBundles = core.TrustBundles()
	}
	var (
		podCerts       *podcerts.Manager
		podCertsSource volume.PodCertificates
	)
	if s.Features.Enabled(features.PodCertificateRequest) {
		var kube kubernetes.Interface
		if clients != nil {
			kube = clients.Kube
		}
		podCerts = podcerts.New(podcerts.Options{
			Client:   kube,
			NodeName: s.NodeName,
			NodeUID:  func() types.UID { return core.Node().UID },
			OnChange: func(uid types.UID) { volumes.PodCredentialChanged(uid) },
		})
		podCertsSource = podCerts
	}
	volumes = volume.New(volume.Options{
		RootDir:         s.RootDir,
		CSIDrivers:      plugins.csi,
		CSIAPI:          csiAPI,
		NodeName:        s.NodeName,
		Objects:         core.Objects(),
		Tokens:          core.Tokens(),
		TrustBundles:    trustBundles,
		PodCertificates: podCertsSource,
		UserFields:      s.Features.Enabled(features.AtomicWriteVolumeUserFields),
		EmptyDirMode:    s.Features.Enabled(features.EmptyDirVolumeMode),
		Claims:          claims,
		ClaimStatus:     claimStatus,
		NodeAllocatable: func() v1.ResourceList { return core.Node().Status.Allocatable },
		Recorder:        core.Recorder(),
		Clock:           clock.RealClock{},
		Resync:          func(uid types.UID) { eng.Resync(uid) },
		Evict:           func(uid types.UID, msg string) { eng.Evict(uid, msg) },
		RefreshPeriod:   cfg.SyncFrequency.Duration,
	})
	facts.volumes.Store(volumes)

	podSpec, err := newPodSpecParts(ctx, cfg, s.RootDir, hostIPs, core, clients)
	if err != nil {
		return err
	}

	// The cgroup driver is the runtime's when it names one (cgroupdriver.go).
	if err := useRuntimeCgroupDriver(ctx, cfg); err != nil {
		return err
	}
	// The node's resources: the cgroup hierarchy the pods run in.
	res, err := newNodeResources(ctx, cfg, s.RootDir, s.RuntimeCgroups, &ncfg, machine)
	if err != nil {
		return err
	}

	alloc, actuated, err := newAllocation(ctx, s)
	if err != nil {
		return err
	}

	// The pod startup timeline (stats.go): told about the CRI calls of
	// pod starts by the runtime, about pods and statuses by the engine.
	tl := timeline.New(nil)

	// What pulled each image (pullrecords.go; KubeletEnsureSecretPulledImages).
	records, err := newPullRecords(ctx, s)
	if err != nil {
		return err
	}

	// The runtime, and the probers its liveness decisions read.
	var probes *prober.Manager
	// valueFrom.fileKeyRef reads files in the pod's volumes (EnvFiles).
	var volumeDir func(*v1.Pod, string) (string, error)
	if s.Features.Enabled(features.EnvFiles) {
		volumeDir = volumes.VolumeDir
	}
	rt, err := kuberuntime.New(ctx, kuberuntime.Options{
		RuntimeEndpoint:       cfg.ContainerRuntimeEndpoint,
		ImageEndpoint:         cfg.ImageServiceEndpoint,
		RuntimeRequestTimeout: cfg.RuntimeRequestTimeout.Duration,
		RootDir:               s.RootDir,
		PodLogsDir:            cfg.PodLogsDir,
		CgroupDriver:          cfg.CgroupDriver,
		CgroupRoot:            cfg.CgroupRoot,
		CgroupParent:          res.cgroups.PodParent,
		PodCgroup:             res.cgroups.SetPod,
		Actuated:              actuated,
		ResolvConf:            derefString(cfg.ResolverConfig),
		ClusterDNS:            cfg.ClusterDNS,
		ClusterDomain:         cfg.ClusterDomain,
		NodeName:              s.NodeName,
		MachineMemoryCapacity: machine.MemoryCapacityBytes,
		Recorder:              core.Recorder(),
		SerializeImagePulls:   cfg.SerializeImagePulls == nil || *cfg.SerializeImagePulls,
		MaxParallelImagePulls: int(deref(cfg.MaxParallelImagePulls)),
		Mounts:                volumes.ContainerMounts,
		VolumeDir:             volumeDir,
		ContainerOptions:      plugins.containerOptions,
		PrepareResources:      plugins.dra.PrepareResources,
		Liveness: func(uid types.UID, name, containerID string) (bool, string) {
			return probes.Liveness(uid, name, containerID)
		},
		Started: func(uid types.UID, name, containerID string) bool {
			return probes.StartupSucceeded(uid, name, containerID)
		},
		PodSpec:         podSpec.Deps,
		PullCredentials: podSpec.Credentials,
		PullRecords:     records,
		CRIObserver:     criObserver{tl, res.imagePulled},
		StartGate:       startgate.New(startgate.DefaultSlots(), startgate.DefaultSlowAfter),
	})
	if err != nil {
		return fmt.Errorf("connecting to the container runtime at %s: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	version, err := rt.Version(ctx)
	if err != nil {
		return fmt.Errorf("container runtime at %s does not answer: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	log.Info("Container runtime ready", "runtime", rt.Type(), "version", version)
	recoverPullRecords(ctx, records, rt)
	probes = prober.NewManager(prober.Options{Exec: prober.CRIExec(rt.RuntimeService()), Recorder: core.Recorder(), HostIPs: hostIPs,
		H2C:     s.Features.Enabled(features.H2CContainerProbe),
		GRPCTLS: s.Features.Enabled(features.GRPCContainerProbeTLS)})

	// Pod sources: the static ones configured, and the core's (the API
	// server's pods bound to this node, when joined).
	merger := podconfig.NewMerger()
	var sources []node.Source
	if cfg.StaticPodPath != "" {
		sources = append(sources, node.Source{Name: podspec.SourceFile, Runnable: file.New(file.Config{
			Path: cfg.StaticPodPath, NodeName: s.NodeName, CheckFrequency: cfg.FileCheckFrequency.Duration,
			OnError: invalidManifestReporter(core),
		}, merger.Channel(podspec.SourceFile))})
	}
	if cfg.StaticPodURL != "" {
		sources = append(sources, node.Source{Name: podspec.SourceHTTP, Runnable: url.New(url.Config{
			URL: cfg.StaticPodURL, Header: cfg.StaticPodURLHeader, NodeName: s.NodeName, CheckFrequency: cfg.HTTPCheckFrequency.Duration,
			OnError: invalidManifestReporter(core),
		}, merger.Channel(podspec.SourceHTTP))})
	}
	sources = append(sources, core.PodSources(merger)...)
	var sourceNames []string
	for _, src := range sources {
		sourceNames = append(sourceNames, src.Name)
	}
	seenAllSources = func() bool { return merger.SeenAllSources(sourceNames...) }

	eng = cri.New(cri.Deps{
		Core:           core,
		Runtime:        rt,
		Probes:         probes,
		Volumes:        volumes,
		Security:       podSpec.Security,
		Cgroups:        res.cgroups,
		Allocation:     alloc,
		Updates:        merger.Updates(),
		Sources:        sourceNames,
		SeenAllSources: merger.SeenAllSources,
		HostIPs:        hostIPs,
		Resync:         cfg.SyncFrequency.Duration,
		Clock:          clock.RealClock{},
		Observer:       tl,
		Features:       s.Features,
	})
	facts.engine.Store(eng)
	facts.devices = plugins.devices
	if err := res.attach(ctx, core, eng, rt); err != nil {
		return err
	}
	if records != nil {
		res.images.AfterCollect = records.Prune
	}
	facts.resources.Store(res)
	// Device allocation is admission's last check before the fit, as
	// upstream orders it.
	eng.AddAdmitHandler(plugins.devices.Admit)
	eng.AddReleaser(plugins.dra.UnprepareResources)
	if s.Features.Enabled(features.ResourceHealthStatus) {
		eng.AddStatusPart(plugins.devices.SetResourcesStatus)
		eng.AddStatusPart(plugins.dra.SetResourcesStatus)
	}

	// Virtual nodes beside the real one (virtual.go).
	checks := eng.HealthChecks()
	var vn *nodeset.Set
	if s.VirtualNodes != nil {
		if vn, err = nodeset.New(s, hostIPs, Version()); err != nil {
			return err
		}
		// The real node's /healthz does not depend on its virtual nodes:
		// each shows its own health (its Ready condition, its own API's
		// /healthz), and a failing one is logged and started again.
		vn.API = virtualNodeAPI(s)
	}

	// HTTP endpoints: bound now, so a port in use fails the start clearly.
	pods := podLister{core, eng}
	// Stats and metrics (stats.go), on both the read-only port and the
	// kubelet API.
	routes := monitoringRoutes(s, core, rt, eng, tl, machine, res.cgroups.PodCgroup, res.system.Names, volumes, plugins.dra.ClaimsInUse)
	servers, err := listen(cfg.HealthzBindAddress, deref(cfg.HealthzPort), cfg.Address, cfg.ReadOnlyPort, checks, pods, routes)
	if err != nil {
		return err
	}
	// The kubelet API (api.go).
	api, err := newKubeletAPI(ctx, s, apiParts{
		recorder: core.Recorder(), nodeRef: core.NodeRef(), clients: clients, pods: pods, containers: cri.NewContainers(rt),
		checks: checks, routes: routes, hostIPs: hostIPs,
	})
	if err != nil {
		closeServers(servers)
		return err
	}
	servers = append(servers, api...)

	var g runnable.Group
	coreStage := g.Stage("core")
	coreStage.Add("client-certificate", clientCert)
	core.AddTo(coreStage)
	srcStage := g.Stage("sources")
	for _, src := range sources {
		srcStage.Add(src.Name+"-source", src.Runnable)
	}
	srcStage.Add("podconfig", runnable.Func(merger.Start))
	serverStage := g.Stage("servers")
	for _, srv := range servers {
		serverStage.Add(srv.name, srv.r)
	}
	plugins.addTo(g.Stage("plugins"))
	engineStage := g.Stage("engine").StopTimeout(shutdownWait)
	if podSpec.services != nil {
		engineStage.Add("services", podSpec.services)
	}
	eng.AddTo(engineStage, g.Stage("sync-loop"))
	res.addTo(engineStage)
	if podCerts != nil {
		engineStage.Add("pod-certificates", runnable.Func(podCerts.Start))
	}
	if vn != nil {
		g.Stage("virtual-nodes").Add("virtual-nodes", vn)
	}

	log.Info("Kubelet starting", "sources", sourceNames, "rootDir", s.RootDir, "hostIPs", hostIPs, "standalone", clients == nil)
	err = g.Run(ctx)
	log.Info("Kubelet stopped; pods keep running")
	return err
}

// shutdownWait bounds how long a stopping kubelet waits for pod worker
// steps under way (a runtime call is never abandoned midway lightly).
const shutdownWait = runnable.DefaultStopTimeout

// hostFacts is the real node's facts provider: the machine's facts and, once
// the engine exists, the runtime's readiness and version.
type hostFacts struct {
	cfg       *nodestatus.Config
	rootDir   string
	engine    atomic.Pointer[cri.Engine]
	resources atomic.Pointer[nodeResources]
	devices   *devices.Manager
	volumes   atomic.Pointer[volume.Manager]
}

func (h *hostFacts) NodeFacts(ctx context.Context) (nodestatus.Facts, error) {
	m, err := machineinfo.Read(h.rootDir)
	if err != nil {
		return nodestatus.Facts{}, err
	}
	f := nodestatus.HostFacts(h.cfg, m)
	if vols := h.volumes.Load(); vols != nil {
		f.VolumesInUse = vols.VolumesInUse()
	}
	eng := h.engine.Load()
	if eng == nil {
		f.Readiness = nodestatus.Readiness{Errors: []string{"container runtime not connected yet"}}
		return f, nil
	}
	f.NodeInfo.ContainerRuntimeVersion = eng.RuntimeVersion(ctx)
	f.Readiness = eng.Readiness(ctx)
	f.Runtime = eng.RuntimeFacts()
	f.Pressure = h.resources.Load().pressure()
	f.Images = h.resources.Load().statusImages(ctx)
	if h.devices != nil {
		f.Devices.Capacity, f.Devices.Allocatable = h.devices.Capacity()
	}
	if errs := h.resources.Load().readinessErrors(); len(errs) > 0 {
		f.Readiness.Errors = append(f.Readiness.Errors, errs...)
	}
	return f, nil
}

// podLister serves /pods from the core and /runningpods/ from the engine.
type podLister struct {
	core *node.Core
	eng  *cri.Engine
}

func (p podLister) Pods() []*v1.Pod { return p.core.PodsWithStatus() }
func (p podLister) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return p.core.Pods().GetByFullName(namespace + "/" + name)
}
func (p podLister) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	return p.eng.RunningPods(ctx)
}

// namedServer is a bound server: its runnable, and what releases its
// port when the kubelet fails before serving.
type namedServer struct {
	name  string
	r     runnable.Runnable
	close io.Closer
}

// closeServers releases the ports of servers that will not start.
func closeServers(servers []namedServer) {
	for _, s := range servers {
		if s.close != nil {
			_ = s.close.Close()
		}
	}
}

// listen binds the healthz and read-only endpoints that are configured;
// the read-only port also serves the routes marked ReadOnly.
func listen(healthzAddr string, healthzPort int32, addr string, readOnlyPort int32, checks []server.HealthCheck, pods server.PodSource, routes []server.Route) ([]namedServer, error) {
	var out []namedServer
	if healthzPort > 0 {
		l, err := server.Listen(hostPortAddr(healthzAddr, healthzPort))
		if err != nil {
			return nil, fmt.Errorf("healthz endpoint: %w", err)
		}
		h := server.HealthzHandler(checks...)
		out = append(out, namedServer{"healthz", runnable.Func(func(ctx context.Context) error { return server.Serve(ctx, l, h) }), l})
	}
	if readOnlyPort > 0 {
		h, err := server.ReadOnlyHandler(pods, routes, checks...)
		if err == nil {
			var l net.Listener
			if l, err = server.Listen(hostPortAddr(addr, readOnlyPort)); err == nil {
				out = append(out, namedServer{"read-only-server", runnable.Func(func(ctx context.Context) error { return server.Serve(ctx, l, h) }), l})
			}
		}
		if err != nil {
			closeServers(out)
			return nil, fmt.Errorf("read-only endpoint: %w", err)
		}
	}
	return out, nil
}

// invalidManifestReporter reports a static pod manifest that cannot be
// used: a log line and an event on the node, naming the file and the cause.
func invalidManifestReporter(core *node.Core) func(path string, err error) {
	return func(path string, err error) {
		klog.ErrorS(err, "Invalid static pod manifest; its pods are not started", "path", path)
		core.Recorder().Eventf(core.NodeRef(), v1.EventTypeWarning, "FailedToParseStaticPod", "invalid static pod manifest %s: %v", path, err)
	}
}

// hostIPs picks the node's IPs: --node-ip, else the default-route IPv4.
func hostIPs(s *kubeletconfig.Settings, m machineinfo.Info) []string {
	if len(s.NodeIPs) > 0 {
		return s.NodeIPs
	}
	if m.DefaultRouteIPv4 != nil {
		return []string{m.DefaultRouteIPv4.String()}
	}
	return nil
}

// prepareDirs creates the kubelet's root directory layout.
func prepareDirs(rootDir string) error {
	for _, d := range []string{rootDir, filepath.Join(rootDir, "pods")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("creating kubelet directory: %w", err)
		}
	}
	return nil
}

// hostPortAddr joins a host and port from the configuration.
func hostPortAddr(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// newAllocation keeps the pods' allocated and actuated resources for
// in-place resize when InPlacePodVerticalScaling is on. Off, there is none:
// the engine runs pods with their spec's resources, no container is
// resized in place and statuses carry no allocated resources or resize
// conditions, as upstream with the gate off.
func newAllocation(ctx context.Context, s *kubeletconfig.Settings) (*allocation.Manager, kuberuntime.ActuatedResources, error) {
	if !s.Features.Enabled(features.InPlacePodVerticalScaling) {
		klog.FromContext(ctx).Info("In-place pod resize is off (feature gate InPlacePodVerticalScaling=false)")
		return nil, nil, nil
	}
	alloc, err := allocation.New(s.RootDir)
	if err != nil {
		return nil, nil, fmt.Errorf("pod resource allocations: %w", err)
	}
	return alloc, alloc, nil
}

// EventConfigurationWarning is the reason of the Node events that repeat
// the configuration's start warnings (unknown or unimplemented fields,
// ignored flags, gates whose feature this kubelet lacks).
const EventConfigurationWarning = "KubeletConfigurationWarning"

// reportConfigWarnings records each configuration warning as a Warning
// event on the node.
func reportConfigWarnings(rec record.EventRecorder, node *v1.ObjectReference, warnings []string) {
	for _, w := range warnings {
		rec.Eventf(node, v1.EventTypeWarning, EventConfigurationWarning, "%s", w)
	}
}
