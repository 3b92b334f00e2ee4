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
	"net"
	"net/url"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
	"github.com/gokubelet/kubelet/pkg/engine/virtual"
	"github.com/gokubelet/kubelet/pkg/engine/virtual/nodeset"
	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/node/certs"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/server"
	"github.com/gokubelet/kubelet/pkg/server/monitoring"
	"github.com/gokubelet/kubelet/pkg/stats"
)

// virtualNodeAPI returns the builder of a virtual node's kubelet API. With
// enableServer false nothing is served, as for the real node.
//
// What differs from the real node's API: the serving certificate is the
// node's own, kept in the node's own directory: requested by a
// kubelet-serving CSR for system:node:<name> with the node's identity when
// serverTLSBootstrap is on (the virtual nodes file's, else the kubelet's),
// else self-signed for the node's name (tlsCertFile is the real node's; a
// log line says so when it is set); the host-only endpoints are off (/logs/,
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
		topts := servingTLSOptions(s)
		topts.CertFile, topts.KeyFile, topts.GetCertificate = "", "", nil
		topts.CertDir, topts.Host = a.CertDir, a.Name
		var serving *certs.Serving
		if virtualnodes.BootstrapsServing(a.ServerTLSBootstrap, cfg.ServerTLSBootstrap) {
			serving, err = certs.NewServing(certs.ServingOptions{
				CertDir: a.CertDir, NodeName: a.Name, Client: a.Clients.Kube,
				Addresses: func() ([]string, []net.IP) { return certs.ServingAddresses(a.Name, "", a.HostIPs) },
			})
			if err != nil {
				return nil, fmt.Errorf("serving certificate: %w", err)
			}
			topts.GetCertificate = serving.Current
		} else if cfg.TLSCertFile != "" {
			log.Info("tlsCertFile is the real node's serving certificate; this virtual node serves a self-signed one of its own (serverTLSBootstrap in the virtual nodes file requests one by CSR)", "certDir", a.CertDir)
		}
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
		if serving == nil {
			return srv, nil
		}
		return servingAPI{srv, serving}, nil
	}
}

// servingAPI is a virtual node's kubelet API with the serving certificate
// it requests by CSR: the certificate's requests and renewals run as long
// as the API does.
type servingAPI struct {
	nodeset.APIServer
	serving *certs.Serving
}

func (s servingAPI) Start(ctx context.Context) error {
	// The certificate's loop stops with the API, also when the API fails
	// before ctx ends.
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.serving.Start(ctx)
	}()
	err := s.APIServer.Start(ctx)
	cancel()
	<-done
	return err
}

// providerSummary is a provider's stats summary as the stats routes read
// it (a provider reports CPU and memory at most).
type providerSummary struct{ p provider.StatsProvider }

func (s providerSummary) Summary(ctx context.Context, _ stats.Scope) (*statsapi.Summary, error) {
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
