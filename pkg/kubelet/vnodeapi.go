package kubelet

// The kubelet API of each virtual node (virtual-nodes config): served at
// the port its Node advertises, with the real node's authentication and
// authorization settings acting as the virtual node's identity, a serving
// certificate of its own, and the pod endpoints served from its engine and
// provider. pkg/engine/virtual/nodeset calls virtualNodeAPI for each node
// it runs.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/engine/virtual"
	"github.com/gokubelet/kubelet/pkg/engine/virtual/nodeset"
	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/server/monitoring"
	"github.com/gokubelet/kubelet/pkg/stats"
)

// virtualNodeAPI returns the builder of a virtual node's kubelet API. With
// enableServer false nothing is served, as for the real node.
//
// What differs from the real node's API: the serving certificate is
// self-signed for the node's name, kept in the node's own directory
// (serverTLSBootstrap and tlsCertFile are the real node's; a log line says
// so when they are set); the host-only endpoints are off (/logs/,
// /configz, /debug/); /stats/summary and /metrics/resource come from the
// provider's stats (provider.StatsProvider), and there is no /metrics.
func virtualNodeAPI(s *kubeletconfig.Settings) func(context.Context, nodeset.NodeAPI) (nodeset.APIServer, error) {
	return func(ctx context.Context, a nodeset.NodeAPI) (nodeset.APIServer, error) {
		cfg := s.Config
		if cfg.EnableServer != nil && !*cfg.EnableServer {
			return nil, nil
		}
		if a.CertDir == "" {
			return nil, errors.New("no directory for the serving certificate (--root-dir)")
		}
		log := klog.FromContext(ctx)
		auth, err := buildAuth(ctx, s, a.Clients.Kube, a.Core.Recorder(), a.Core.NodeRef())
		if err != nil {
			return nil, err
		}
		if cfg.ServerTLSBootstrap || cfg.TLSCertFile != "" {
			log.Info("serverTLSBootstrap and tlsCertFile give the real node's serving certificate; this virtual node serves a self-signed one of its own", "certDir", a.CertDir)
		}
		topts := servingTLSOptions(s)
		topts.CertFile, topts.KeyFile, topts.GetCertificate = "", "", nil
		topts.CertDir, topts.Host = a.CertDir, a.Name
		tlsCfg, err := server.BuildTLS(topts)
		if err != nil {
			return nil, fmt.Errorf("kubelet API: %w", err)
		}
		// /stats/summary and /metrics/resource (metrics-server, kubectl
		// top) from a provider that reports stats.
		var routes []server.Route
		if sp, ok := a.Engine.Provider().(provider.StatsProvider); ok {
			src := providerSummary{sp}
			routes = monitoring.Routes(monitoring.Options{Summary: src, Resource: stats.NewResourceRegistry(src)})
		}
		hc := handlerConfig(s, apiParts{
			pods:       virtualPods{a.Engine},
			containers: virtualContainers{a.Engine.Streams()},
			checks:     []server.HealthCheck{{Name: "pod-informer", Check: a.Engine.HealthCheck}},
			routes:     routes,
		}, auth)
		hc.NodeName = a.Name
		hc.SystemLogHandler, hc.ProfilingHandler, hc.DebugFlagsHandler = false, false, false
		hc.Configz = nil
		h, err := server.NewHandler(hc)
		if err != nil {
			return nil, fmt.Errorf("kubelet API: %w", err)
		}
		srv, err := server.ListenAPI(hostPortAddr(cfg.Address, a.Port), h, tlsCfg, auth, string(cfg.Authorization.Mode))
		if err != nil {
			return nil, err
		}
		return srv, nil
	}
}

// providerSummary is a provider's stats summary as the stats routes read
// it (a provider reports CPU and memory at most).
type providerSummary struct{ p provider.StatsProvider }

func (s providerSummary) Summary(ctx context.Context, _ bool) (*statsapi.Summary, error) {
	return s.p.GetStatsSummary(ctx)
}

// virtualPods are a virtual node's pods, for the pod endpoints.
type virtualPods struct{ e *virtual.Engine }

func (p virtualPods) Pods() []*v1.Pod { return p.e.Pods() }
func (p virtualPods) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return p.e.GetPodByName(namespace, name)
}
func (p virtualPods) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	return p.e.RunningPods(ctx)
}

// virtualContainers serves a virtual node's logs and streams through its
// provider: sessions in process (server.InProcessStreams), logs as the
// provider returns them (all on stdout: a provider's log has no streams).
type virtualContainers struct{ *virtual.Streams }

var _ server.InProcessStreams = virtualContainers{}

func (c virtualContainers) ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions) (server.LogWriter, error) {
	rc, err := c.Streams.ContainerLogs(ctx, pod, container, opts)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, server.NotFound(err)
		}
		return nil, err
	}
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		defer rc.Close()
		w := stdout
		if w == nil {
			w = stderr
		}
		if w == nil {
			return nil
		}
		// A following reader ends when the request does.
		stop := context.AfterFunc(ctx, func() { _ = rc.Close() })
		defer stop()
		_, err := io.Copy(w, rc)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}, nil
}

func (c virtualContainers) RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	return c.Streams.RunInContainer(ctx, pod, container, cmd)
}

// errInProcess: the API serves a virtual node's sessions in process and
// never asks for a streaming server's URL.
var errInProcess = errors.New("a virtual node's sessions are served in process")

func (virtualContainers) GetExec(context.Context, *v1.Pod, string, []string, server.StreamOptions) (*url.URL, error) {
	return nil, errInProcess
}

func (virtualContainers) GetAttach(context.Context, *v1.Pod, string, server.StreamOptions) (*url.URL, error) {
	return nil, errInProcess
}

func (virtualContainers) GetPortForward(context.Context, *v1.Pod, []int32) (*url.URL, error) {
	return nil, errInProcess
}
