package kubelet

// The wiring of the kubelet API (port 10250), the read-only port and the
// node's certificates. Entry points used elsewhere in this package:
//   - clientConfig (cluster.go connect): the API client configuration,
//     after TLS bootstrap, with client certificate rotation;
//   - startServers (run.go): binds and serves the read-only port and the
//     kubelet API once the runtime is connected.
// Other parts add endpoints to the kubelet API with registerRoutes, from
// an init function in their own wire file.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/certs"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/runtime/logs"
	"github.com/gokubelet/kubelet/pkg/server"
)

var (
	routesMu       sync.Mutex
	routeProviders []func(k *Kubelet) []server.Route
)

// registerRoutes adds a source of extra kubelet API routes (see
// server.Route): called from an init function, it is asked for its routes
// when the servers start, with the assembled Kubelet. The routes are
// served behind the API's authentication and authorization, as
// nodes/<Route.Subresource>, and on the read-only port when
// Route.ReadOnly.
func registerRoutes(f func(k *Kubelet) []server.Route) {
	routesMu.Lock()
	defer routesMu.Unlock()
	routeProviders = append(routeProviders, f)
}

func (k *Kubelet) extraRoutes() []server.Route {
	routesMu.Lock()
	defer routesMu.Unlock()
	var out []server.Route
	for _, f := range routeProviders {
		out = append(out, f(k)...)
	}
	return out
}

// clientConfig returns the base configuration of the kubelet's API
// clients: --kubeconfig, after a TLS bootstrap with
// --bootstrap-kubeconfig when needed; with rotateCertificates, a
// transport that presents the rotating client certificate. The rotation
// runs until ctx ends; if the kubelet is left without a valid certificate
// while the API server answers, it exits (as upstream) so that it can
// bootstrap again.
func (k *Kubelet) clientConfig(ctx context.Context) (*rest.Config, error) {
	s := k.settings
	c, err := certs.NewClient(ctx, certs.ClientOptions{
		KubeconfigPath:          s.KubeconfigPath,
		BootstrapKubeconfigPath: s.BootstrapKubeconfigPath,
		CertDir:                 s.CertDir,
		NodeName:                s.NodeName,
		Rotate:                  k.cfg.RotateCertificates,
	})
	if err != nil {
		return nil, err
	}
	if c.Manager() != nil {
		go func() {
			if err := c.Run(klog.NewContext(ctx, klog.FromContext(ctx).WithName("client-cert"))); err != nil {
				klog.FromContext(ctx).Error(err, "Client certificate rotation failed; exiting so that the kubelet can bootstrap again")
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			}
		}()
	}
	return rest.CopyConfig(c.Config), nil
}

// startServers binds the read-only port and the kubelet API and serves
// them until ctx ends. A port in use is a start-up error.
func (k *Kubelet) startServers(ctx context.Context, goRun func(string, func(context.Context)), checks []server.HealthCheck) error {
	cfg := k.cfg
	routes := k.extraRoutes()
	if cfg.ReadOnlyPort > 0 {
		h, err := server.ReadOnlyHandler(k, routes, checks...)
		if err != nil {
			return fmt.Errorf("read-only endpoint: %w", err)
		}
		l, err := server.Listen(hostPortAddr(cfg.Address, cfg.ReadOnlyPort))
		if err != nil {
			return fmt.Errorf("read-only endpoint: %w", err)
		}
		goRun("read-only-server", func(ctx context.Context) { logServe(ctx, server.Serve(ctx, l, h)) })
	}
	if cfg.EnableServer != nil && !*cfg.EnableServer {
		return nil
	}
	var client kubernetes.Interface
	if k.cluster != nil {
		client = k.cluster.kube
	}
	log := klog.FromContext(ctx)
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
		return fmt.Errorf("kubelet API: %w", err)
	}
	for _, w := range auth.Warnings {
		log.Info("Kubelet API security setting cannot take effect", "detail", w)
		k.recorder.Eventf(k.nodeRef(), v1.EventTypeWarning, "KubeletAPISecurity", "%s", w)
	}
	topts := server.TLSOptions{
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSPrivateKeyFile,
		CertDir: k.settings.CertDir, Host: k.nodeName,
		CipherSuites: cfg.TLSCipherSuites, MinVersion: cfg.TLSMinVersion,
		RequestClientCert: authn.X509.ClientCAFile != "",
	}
	if cfg.ServerTLSBootstrap {
		switch {
		case client == nil:
			log.Info("serverTLSBootstrap needs an API server; serving a certificate from files instead")
		default:
			if cfg.TLSCertFile != "" {
				log.Info("serverTLSBootstrap is set: tlsCertFile and tlsPrivateKeyFile are not served")
			}
			m, err := certs.NewServing(certs.ServingOptions{CertDir: k.settings.CertDir, NodeName: k.nodeName, Client: client, Addresses: k.servingAddresses})
			if err != nil {
				return fmt.Errorf("serving certificate: %w", err)
			}
			topts.GetCertificate = m.Current
			goRun("serving-cert", func(ctx context.Context) {
				m.Start()
				<-ctx.Done()
				m.Stop()
			})
		}
	}
	tlsCfg, err := server.BuildTLS(topts)
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	h, err := server.NewHandler(server.Config{
		NodeName:            k.nodeName,
		Pods:                k,
		Containers:          kubeletContainers{k},
		Checks:              checks,
		Auth:                auth,
		FineGrainedAuthz:    true,
		DebuggingHandlers:   cfg.EnableDebuggingHandlers == nil || *cfg.EnableDebuggingHandlers,
		SystemLogHandler:    cfg.EnableSystemLogHandler == nil || *cfg.EnableSystemLogHandler,
		ProfilingHandler:    cfg.EnableProfilingHandler == nil || *cfg.EnableProfilingHandler,
		ContentionProfiling: cfg.EnableContentionProfiling,
		DebugFlagsHandler:   cfg.EnableDebugFlagsHandler == nil || *cfg.EnableDebugFlagsHandler,
		Configz:             k.configz,
		Routes:              routes,
	})
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	addr := hostPortAddr(cfg.Address, cfg.Port)
	l, err := server.Listen(addr)
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	goRun("client-ca", auth.Run)
	goRun("serving-cert-files", tlsCfg.Run)
	goRun("kubelet-api", func(ctx context.Context) {
		klog.FromContext(ctx).Info("Serving the kubelet API", "address", addr, "certificate", tlsCfg.Source, "authorization", cfg.Authorization.Mode)
		logServe(ctx, server.ServeTLS(ctx, l, h, tlsCfg.Config))
	})
	return nil
}

// servingAddresses are the names and IPs the serving certificate covers:
// the node name and the node's IPs.
func (k *Kubelet) servingAddresses() ([]string, []net.IP) {
	names := []string{k.nodeName}
	if h, err := os.Hostname(); err == nil && h != "" && h != k.nodeName {
		names = append(names, h)
	}
	var ips []net.IP
	for _, s := range k.hostIPs {
		if ip := net.ParseIP(s); ip != nil && !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
	}
	return names, ips
}

// configz is the effective configuration as /configz shows it.
func (k *Kubelet) configz() any {
	c := k.cfg.DeepCopy()
	c.APIVersion, c.Kind = "", ""
	return c
}

// GetPodByName implements server.PodLookup: the node's pod (for a static
// pod, the pod itself, which its mirror pod's name also finds).
func (k *Kubelet) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	return k.pods.GetByFullName(namespace + "/" + name)
}

// streamingRuntime is what the API needs of the runtime manager
// (kuberuntime.Manager implements it).
type streamingRuntime interface {
	FindContainer(ctx context.Context, uid types.UID, name, namespace, containerName string, previous bool) (container.Status, error)
	ContainerLogPath(ctx context.Context, containerID, podNamespace, podName string, podUID types.UID) (string, error)
	ContainerRunning(ctx context.Context, containerID string) bool
	GetExec(ctx context.Context, containerID string, cmd []string, o kuberuntime.StreamOptions) (*url.URL, error)
	GetAttach(ctx context.Context, containerID string, o kuberuntime.StreamOptions) (*url.URL, error)
	GetPortForward(ctx context.Context, sandboxID string, ports []int32) (*url.URL, error)
	ReadySandboxID(ctx context.Context, uid types.UID, name, namespace string) (string, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
}

var _ streamingRuntime = (*kuberuntime.Manager)(nil)

// kubeletContainers implements server.Containers on the runtime.
type kubeletContainers struct{ k *Kubelet }

func (c kubeletContainers) rt() (streamingRuntime, error) {
	rt, ok := c.k.runtime.(streamingRuntime)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the container runtime does not support streaming")
	}
	return rt, nil
}

// running finds the pod's running instance of a container.
func (c kubeletContainers) running(ctx context.Context, rt streamingRuntime, pod *v1.Pod, name string) (string, error) {
	st, err := rt.FindContainer(ctx, pod.UID, pod.Name, pod.Namespace, name, false)
	if err != nil || st.State != container.StateRunning {
		return "", status.Errorf(codes.NotFound, "container %q of pod %s is not running", name, podspec.FullName(pod))
	}
	return st.ID, nil
}

func (c kubeletContainers) ContainerLogs(ctx context.Context, pod *v1.Pod, name string, opts *v1.PodLogOptions) (server.LogWriter, error) {
	rt, err := c.rt()
	if err != nil {
		return nil, err
	}
	// These answers are 400s with upstream's words: the API server passes
	// them on to `kubectl logs`.
	st, err := rt.FindContainer(ctx, pod.UID, pod.Name, pod.Namespace, name, opts.Previous)
	if err != nil {
		if !errors.Is(err, kuberuntime.ErrContainerNotFound) {
			return nil, err
		}
		if opts.Previous {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
		}
		return nil, fmt.Errorf("container %q in pod %q is waiting to start", name, pod.Name)
	}
	path, err := rt.ContainerLogPath(ctx, st.ID, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("log of container %q in pod %q is not available: %w", name, pod.Name, err)
	}
	o := logs.NewOptions(opts, time.Now())
	return func(ctx context.Context, stdout, stderr io.Writer) error {
		alive := func() bool { return rt.ContainerRunning(ctx, st.ID) }
		return logs.Read(ctx, path, o, stdout, stderr, alive)
	}, nil
}

func (c kubeletContainers) GetExec(ctx context.Context, pod *v1.Pod, name string, cmd []string, o server.StreamOptions) (*url.URL, error) {
	rt, err := c.rt()
	if err != nil {
		return nil, err
	}
	id, err := c.running(ctx, rt, pod, name)
	if err != nil {
		return nil, err
	}
	return rt.GetExec(ctx, id, cmd, kuberuntime.StreamOptions(o))
}

func (c kubeletContainers) GetAttach(ctx context.Context, pod *v1.Pod, name string, o server.StreamOptions) (*url.URL, error) {
	rt, err := c.rt()
	if err != nil {
		return nil, err
	}
	id, err := c.running(ctx, rt, pod, name)
	if err != nil {
		return nil, err
	}
	return rt.GetAttach(ctx, id, kuberuntime.StreamOptions(o))
}

func (c kubeletContainers) GetPortForward(ctx context.Context, pod *v1.Pod, ports []int32) (*url.URL, error) {
	rt, err := c.rt()
	if err != nil {
		return nil, err
	}
	sb, err := rt.ReadySandboxID(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return rt.GetPortForward(ctx, sb, ports)
}

func (c kubeletContainers) RunInContainer(ctx context.Context, pod *v1.Pod, name string, cmd []string) ([]byte, error) {
	rt, err := c.rt()
	if err != nil {
		return nil, err
	}
	id, err := c.running(ctx, rt, pod, name)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := rt.ExecSync(ctx, id, cmd, 0)
	return append(stdout, stderr...), err
}
