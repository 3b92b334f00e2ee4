package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/statuswriter"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podmanager"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
	"github.com/gokubelet/kubelet/pkg/pod/source/file"
	"github.com/gokubelet/kubelet/pkg/pod/source/url"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/runtime/pleg"
	"github.com/gokubelet/kubelet/pkg/server"
)

// Run starts the kubelet with the given settings and blocks until ctx ends
// or a fatal error occurs. Stopping leaves pods running, as upstream does:
// a restarted kubelet adopts them.
func Run(ctx context.Context, s *kubeletconfig.Settings) error {
	log := klog.FromContext(ctx).WithValues("node", s.NodeName)
	ctx = klog.NewContext(ctx, log)
	cfg := s.Config

	if err := prepareDirs(s.RootDir); err != nil {
		return err
	}
	machine, err := machineinfo.Read(s.RootDir)
	if err != nil {
		return fmt.Errorf("reading machine facts: %w", err)
	}
	for _, w := range machine.Warnings {
		log.Info("Machine fact unavailable", "detail", w)
	}

	k := &Kubelet{
		settings: s,
		cfg:      cfg,
		nodeName: s.NodeName,
		hostIPs:  hostIPs(s, machine),
		clock:    clock.RealClock{},
		pods:     podmanager.New(),
		merger:   podconfig.NewMerger(),
	}
	k.loopHeartbeat.Store(time.Now().UnixNano())

	// Events: logged always; sent to the API server in cluster mode.
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(3)
	defer broadcaster.Shutdown()
	k.recorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: s.NodeName})

	var cl *clusterParts
	if s.KubeconfigPath != "" {
		cl, err = k.connect(ctx, broadcaster, machine)
		if err != nil {
			return err
		}
	}

	k.obs = newObservability()
	rt, err := kuberuntime.New(ctx, kuberuntime.Options{
		RuntimeEndpoint:       cfg.ContainerRuntimeEndpoint,
		ImageEndpoint:         cfg.ImageServiceEndpoint,
		RuntimeRequestTimeout: cfg.RuntimeRequestTimeout.Duration,
		RootDir:               s.RootDir,
		PodLogsDir:            cfg.PodLogsDir,
		CgroupDriver:          cfg.CgroupDriver,
		CgroupRoot:            cfg.CgroupRoot,
		ResolvConf:            derefString(cfg.ResolverConfig),
		ClusterDNS:            cfg.ClusterDNS,
		ClusterDomain:         cfg.ClusterDomain,
		NodeName:              s.NodeName,
		MachineMemoryCapacity: machine.MemoryCapacityBytes,
		Recorder:              k.recorder,
		SerializeImagePulls:   cfg.SerializeImagePulls == nil || *cfg.SerializeImagePulls,
		MaxParallelImagePulls: int(deref(cfg.MaxParallelImagePulls)),
		Liveness: func(uid types.UID, name, containerID string) (bool, string) {
			return k.probes.Liveness(uid, name, containerID)
		},
		CRIObserver: k.obs.criObserver(),
	})
	if err != nil {
		return fmt.Errorf("connecting to the container runtime at %s: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	k.runtime = rt
	k.probes = prober.NewManager(prober.Options{Exec: prober.CRIExec(rt.RuntimeService()), Recorder: k.recorder, Clock: k.clock, HostIPs: k.hostIPs})
	defer k.probes.Stop()
	version, err := rt.Version(ctx)
	if err != nil {
		return fmt.Errorf("container runtime at %s does not answer: %w", cfg.ContainerRuntimeEndpoint, err)
	}
	log.Info("Container runtime ready", "runtime", rt.Type(), "version", version)

	k.pleg = pleg.New(rt, plegRelistPeriod, plegChannelCapacity, k.clock)
	k.workers = podworkers.New(k.obs.wrapHandler(k), podworkers.Options{Resync: cfg.SyncFrequency.Duration, Clock: k.clock})

	var wg sync.WaitGroup
	goRun := func(name string, f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(klog.NewContext(ctx, log.WithName(name)))
		}()
	}
	defer wg.Wait()

	// Status first: workers write to it from their first sync.
	sm := statuswriter.NewManager(statuswriter.Options{Client: cl.client(), Resolver: cl.resolver(k)})
	k.status = k.obs.wrapStatus(sm)
	goRun("status", sm.Run)

	// Pod sources.
	if cfg.StaticPodPath != "" {
		k.sources = append(k.sources, podspec.SourceFile)
		src := file.New(file.Config{Path: cfg.StaticPodPath, NodeName: s.NodeName, CheckFrequency: cfg.FileCheckFrequency.Duration, OnError: k.onInvalidManifest}, k.merger.Channel(podspec.SourceFile))
		goRun("file-source", func(ctx context.Context) {
			if err := src.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Static pod directory source stopped")
			}
		})
	}
	if cfg.StaticPodURL != "" {
		k.sources = append(k.sources, podspec.SourceHTTP)
		src := url.New(url.Config{URL: cfg.StaticPodURL, Header: cfg.StaticPodURLHeader, NodeName: s.NodeName, CheckFrequency: cfg.HTTPCheckFrequency.Duration, OnError: k.onInvalidManifest}, k.merger.Channel(podspec.SourceHTTP))
		goRun("url-source", func(ctx context.Context) {
			if err := src.Run(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Static pod URL source stopped")
			}
		})
	}
	if cl != nil {
		k.sources = append(k.sources, podspec.SourceAPI)
		cl.startSources(ctx, k, goRun)
	}
	goRun("podconfig", func(ctx context.Context) { k.merger.Run(ctx) })

	k.obs.start(k, rt, machine)

	// HTTP endpoints: bind before starting the loops, so a port in use is a
	// clear start-up failure.
	checks := []server.HealthCheck{{Name: "syncloop", Check: k.syncLoopHealthy}, {Name: "pleg", Check: k.pleg.Healthy}}
	if deref(cfg.HealthzPort) > 0 {
		l, err := server.Listen(hostPortAddr(cfg.HealthzBindAddress, *cfg.HealthzPort))
		if err != nil {
			return fmt.Errorf("healthz endpoint: %w", err)
		}
		goRun("healthz", func(ctx context.Context) { logServe(ctx, server.Serve(ctx, l, server.HealthzHandler(checks...))) })
	}
	if cfg.ReadOnlyPort > 0 {
		l, err := server.Listen(hostPortAddr(cfg.Address, cfg.ReadOnlyPort))
		if err != nil {
			return fmt.Errorf("read-only endpoint: %w", err)
		}
		goRun("read-only-server", func(ctx context.Context) {
			logServe(ctx, server.Serve(ctx, l, k.obs.readOnly(server.ReadOnlyHandler(k, checks...))))
		})
	}

	k.workers.Start(ctx)
	goRun("pleg", k.pleg.Start)
	log.Info("Kubelet started", "sources", k.sources, "rootDir", s.RootDir, "hostIPs", k.hostIPs)
	k.syncLoop(ctx)
	log.Info("Kubelet stopping; pods keep running")
	if !k.workers.Wait(shutdownWait) {
		log.Info("Pod workers still busy at shutdown; exiting anyway", "waited", shutdownWait)
	}
	return nil
}

func logServe(ctx context.Context, err error) {
	if err != nil {
		klog.FromContext(ctx).Error(err, "HTTP server stopped")
	}
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

// onInvalidManifest reports a static pod manifest that cannot be used: a
// log line and an event on the node, naming the file and the cause.
func (k *Kubelet) onInvalidManifest(path string, err error) {
	klog.ErrorS(err, "Invalid static pod manifest; its pods are not started", "path", path)
	k.recorder.Eventf(k.nodeRef(), v1.EventTypeWarning, "FailedToParseStaticPod", "invalid static pod manifest %s: %v", path, err)
}

// nodeRef is the object node-level events are recorded on.
func (k *Kubelet) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: k.nodeName, UID: types.UID(k.nodeName)}
}
