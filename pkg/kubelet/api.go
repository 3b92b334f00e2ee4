package kubelet

// The assembly of the node's TLS identity and of the kubelet API (port
// 10250): configuration in, parts out. The logic lives in pkg/node/certs
// (bootstrap, rotation, the serving certificate), pkg/server (TLS,
// authentication, authorization, endpoints) and pkg/engine/cri
// (container logs and streaming).
//
// Wiring (run.go): clientIdentity before the node core's clients are
// built; newKubeletAPI once the engine exists, its runnables in the
// servers stage.

import (
	"context"
	"fmt"
	"net"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/engine/cri"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/certs"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/server"
)

// The runtime manager offers what the kubelet API needs.
var _ cri.StreamingRuntime = (*kuberuntime.Manager)(nil)

// clientIdentity is the base configuration of the node's API clients:
// --kubeconfig, after a TLS bootstrap with --bootstrap-kubeconfig when
// needed; with rotateCertificates, a transport presenting the rotating
// client certificate, and the runnable that rotates it (nil otherwise).
// The rotation's failure (no valid certificate while the API server
// answers) stops the kubelet, so that a restart bootstraps again.
func clientIdentity(ctx context.Context, s *kubeletconfig.Settings) (*rest.Config, runnable.Runnable, error) {
	c, err := certs.NewClient(ctx, certs.ClientOptions{
		KubeconfigPath:          s.KubeconfigPath,
		BootstrapKubeconfigPath: s.BootstrapKubeconfigPath,
		CertDir:                 s.CertDir,
		NodeName:                s.NodeName,
		Rotate:                  s.Config.RotateCertificates,
	})
	if err != nil {
		return nil, nil, err
	}
	if c.Manager() == nil {
		return c.Config, nil, nil
	}
	return c.Config, runnable.Func(c.Run), nil
}

// apiParts are what the kubelet API's endpoints are served from.
type apiParts struct {
	// recorder and nodeRef report security settings that cannot take
	// effect, as events on the node.
	recorder   record.EventRecorder
	nodeRef    *v1.ObjectReference
	clients    *node.Clients
	pods       server.PodLookup
	containers server.Containers
	checks     []server.HealthCheck
	routes     []server.Route
	hostIPs    []string
}

// newKubeletAPI builds the kubelet API from the configuration and binds
// its port: the named runnables to add to the servers stage (the server,
// and the serving certificate's rotation with serverTLSBootstrap). Nothing
// when enableServer is false.
func newKubeletAPI(ctx context.Context, s *kubeletconfig.Settings, p apiParts) ([]namedServer, error) {
	cfg := s.Config
	if cfg.EnableServer != nil && !*cfg.EnableServer {
		return nil, nil
	}
	log := klog.FromContext(ctx)
	client := clientOf(p.clients)
	auth, err := buildAuth(ctx, s, client, p.recorder, p.nodeRef)
	if err != nil {
		return nil, err
	}

	var out []namedServer
	topts := servingTLSOptions(s)
	if cfg.ServerTLSBootstrap {
		if client == nil {
			log.Info("serverTLSBootstrap needs an API server; serving a certificate from files instead")
		} else {
			if cfg.TLSCertFile != "" {
				log.Info("serverTLSBootstrap is set: tlsCertFile and tlsPrivateKeyFile are not served")
			}
			hostname, _ := os.Hostname()
			serving, err := certs.NewServing(certs.ServingOptions{
				CertDir: s.CertDir, NodeName: s.NodeName, Client: client,
				Addresses: func() ([]string, []net.IP) { return certs.ServingAddresses(s.NodeName, hostname, p.hostIPs) },
			})
			if err != nil {
				return nil, fmt.Errorf("serving certificate: %w", err)
			}
			topts.GetCertificate = serving.Current
			out = append(out, namedServer{"serving-certificate", serving, nil})
		}
	}
	tlsCfg, err := server.BuildTLS(topts)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	h, err := server.NewHandler(handlerConfig(s, p, auth))
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	srv, err := server.ListenAPI(hostPortAddr(cfg.Address, cfg.Port), h, tlsCfg, auth, string(cfg.Authorization.Mode))
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	return append(out, namedServer{"kubelet-api", srv, srv}), nil
}

// buildAuth is the kubelet API's authentication and authorization from
// the configuration, acting with client (webhook token reviews and
// subject access reviews). A setting that cannot take effect is logged
// and reported as an event on nodeRef.
func buildAuth(ctx context.Context, s *kubeletconfig.Settings, client kubernetes.Interface, recorder record.EventRecorder, nodeRef *v1.ObjectReference) (*server.Auth, error) {
	cfg := s.Config
	authn := cfg.Authentication
	auth, err := server.BuildAuth(server.AuthOptions{
		Anonymous:            authn.Anonymous.Enabled != nil && *authn.Anonymous.Enabled,
		ClientCAFile:         authn.X509.ClientCAFile,
		WebhookAuthn:         authn.Webhook.Enabled != nil && *authn.Webhook.Enabled,
		WebhookAuthnCacheTTL: authn.Webhook.CacheTTL.Duration,
		AuthzMode:            string(cfg.Authorization.Mode),
		AuthorizedTTL:        cfg.Authorization.Webhook.CacheAuthorizedTTL.Duration,
		UnauthorizedTTL:      cfg.Authorization.Webhook.CacheUnauthorizedTTL.Duration,
		Client:               client,
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	for _, w := range auth.Warnings {
		klog.FromContext(ctx).Info("Kubelet API security setting cannot take effect", "detail", w)
		recorder.Eventf(nodeRef, v1.EventTypeWarning, "KubeletAPISecurity", "%s", w)
	}
	return auth, nil
}

// configz is the effective configuration as /configz shows it: as
// upstream's at 1.37, with its apiVersion and kind
// (kubelet.config.k8s.io/v1beta1 KubeletConfiguration), whatever the
// configuration file said (a kubelet run on flags alone has none).
func configz(cfg *kubeletv1beta1.KubeletConfiguration) any {
	c := cfg.DeepCopy()
	c.APIVersion, c.Kind = kubeletv1beta1.SchemeGroupVersion.String(), "KubeletConfiguration"
	return c
}

func clientOf(c *node.Clients) kubernetes.Interface {
	if c == nil {
		return nil
	}
	return c.Kube
}

// handlerConfig is the kubelet API's handler configuration from the
// settings: KubeletFineGrainedAuthz off authorizes /pods, /healthz and
// /configz as nodes/proxy alone, as upstream with the gate off.
func handlerConfig(s *kubeletconfig.Settings, p apiParts, auth *server.Auth) server.Config {
	cfg := s.Config
	return server.Config{
		NodeName:            s.NodeName,
		Pods:                p.pods,
		Containers:          p.containers,
		Checks:              p.checks,
		Auth:                auth,
		FineGrainedAuthz:    s.Features.Enabled(features.KubeletFineGrainedAuthz),
		DebuggingHandlers:   cfg.EnableDebuggingHandlers == nil || *cfg.EnableDebuggingHandlers,
		SystemLogHandler:    cfg.EnableSystemLogHandler == nil || *cfg.EnableSystemLogHandler,
		ProfilingHandler:    cfg.EnableProfilingHandler == nil || *cfg.EnableProfilingHandler,
		ContentionProfiling: cfg.EnableContentionProfiling,
		DebugFlagsHandler:   cfg.EnableDebugFlagsHandler == nil || *cfg.EnableDebugFlagsHandler,
		Configz:             func() any { return configz(cfg) },
		Routes:              p.routes,
		Streams: server.StreamLimits{
			PerCaller:   s.MaxStreamsPerCaller,
			IdleTimeout: cfg.StreamingConnectionIdleTimeout.Duration,
		},
	}
}

// servingTLSOptions are the kubelet API's TLS settings: with
// ReloadKubeletServerCertificateFile off, tlsCertFile is read once.
func servingTLSOptions(s *kubeletconfig.Settings) server.TLSOptions {
	cfg := s.Config
	return server.TLSOptions{
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSPrivateKeyFile,
		CertDir: s.CertDir, Host: s.NodeName,
		CipherSuites: cfg.TLSCipherSuites, MinVersion: cfg.TLSMinVersion,
		RequestClientCert: cfg.Authentication.X509.ClientCAFile != "",
		StaticCertFile:    !s.Features.Enabled(features.ReloadKubeletServerCertificateFile),
	}
}
