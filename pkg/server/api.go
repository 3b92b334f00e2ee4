package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Route is an endpoint another part of the kubelet mounts on its API
// (e.g. /stats/ and /metrics from the stats engine). The route is served
// behind the same authentication and authorization as the built-in
// endpoints; requests to it are authorized as nodes/<Subresource> of the
// node.
type Route struct {
	// Path is where the handler is mounted. It covers the path itself and
	// everything under it: "/metrics" serves "/metrics" and
	// "/metrics/cadvisor" unless a longer route ("/metrics/cadvisor")
	// claims that. A trailing slash makes no difference. The paths of the
	// built-in endpoints (/healthz, /pods, /runningpods, /containerLogs,
	// /exec, /attach, /portForward, /run, /logs, /configz, /debug) are
	// refused.
	Path string
	// Handler serves the requests. r.URL.Path is left as received.
	Handler http.Handler
	// Subresource is the nodes subresource that authorizes requests, as
	// upstream: "stats" for /stats/, "metrics" for /metrics*.
	Subresource string
	// ReadOnly also serves the route on the unauthenticated read-only
	// port (readOnlyPort), as upstream does for /stats/ and /metrics*.
	ReadOnly bool
}

// StreamOptions are the streams an exec or attach session asks for.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// PodLookup finds the pods bound to this node.
type PodLookup interface {
	PodSource
	// GetPodByName returns the node's pod with that namespace and name.
	GetPodByName(namespace, name string) (*v1.Pod, bool)
}

// Containers is the runtime side of the API: container logs, exec,
// attach, port forwarding and run. pod is always a pod of the node, and
// container a container of its spec.
type Containers interface {
	// ContainerLogs finds the container's log by opts (the instance
	// before the current one with opts.Previous) and returns the function
	// that writes it; an error wrapped with NotFound is answered 404,
	// others 400. The function writes to stdout and stderr by the stream
	// of each line (nil leaves a stream out) and returns once the log is
	// written or, when following, once the container stops or ctx ends.
	ContainerLogs(ctx context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions) (LogWriter, error)
	// GetExec, GetAttach and GetPortForward return the URL of the
	// runtime's streaming server that serves the session; the kubelet
	// proxies the client's upgraded connection there.
	GetExec(ctx context.Context, pod *v1.Pod, container string, cmd []string, o StreamOptions) (*url.URL, error)
	GetAttach(ctx context.Context, pod *v1.Pod, container string, o StreamOptions) (*url.URL, error)
	GetPortForward(ctx context.Context, pod *v1.Pod, ports []int32) (*url.URL, error)
	// RunInContainer runs cmd and returns its combined output.
	RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error)
}

// InProcessStreams is implemented by a Containers that serves exec, attach
// and port-forward sessions itself instead of through a runtime's
// streaming server (a virtual node, whose provider runs the session): the
// API negotiates the client's upgraded connection (SPDY or WebSocket) with
// k8s.io/cri-streaming's helpers and hands the streams to these methods,
// with the pod's UID and the container's name. GetExec, GetAttach and
// GetPortForward are then not called.
type InProcessStreams interface {
	remotecommand.Executor
	remotecommand.Attacher
	portforward.PortForwarder
}

// streamCreationTimeout bounds the wait for a client's streams once its
// connection is upgraded (upstream's default, 30 s).
const streamCreationTimeout = 30 * time.Second

// LogWriter writes a container log (see Containers.ContainerLogs).
type LogWriter func(ctx context.Context, stdout, stderr io.Writer) error

// Config is the kubelet API's configuration.
type Config struct {
	// NodeName is the node the authorization attributes name.
	NodeName   string
	Pods       PodLookup
	Containers Containers
	// Checks are the /healthz checks.
	Checks []HealthCheck
	// Auth authenticates and authorizes requests (see BuildAuth).
	Auth *Auth
	// FineGrainedAuthz tries the pods/healthz/configz subresources before
	// proxy (KubeletFineGrainedAuthz, on by default upstream).
	FineGrainedAuthz bool

	// DebuggingHandlers serves logs, exec, attach, port-forward, run,
	// /runningpods/, /configz and the /logs/ and /debug/ endpoints
	// (enableDebuggingHandlers). Without it they answer 405.
	DebuggingHandlers bool
	// SystemLogHandler serves /logs/ (enableSystemLogHandler).
	SystemLogHandler bool
	// LogDir is the directory /logs/ serves (default /var/log).
	LogDir string
	// ProfilingHandler serves /debug/pprof/ (enableProfilingHandler);
	// ContentionProfiling also turns on block profiling.
	ProfilingHandler    bool
	ContentionProfiling bool
	// DebugFlagsHandler serves PUT /debug/flags/v, which sets the log
	// verbosity (enableDebugFlagsHandler).
	DebugFlagsHandler bool
	// Configz returns the effective configuration for /configz.
	Configz func() any

	// Routes are extra endpoints (see Route).
	Routes []Route

	// Streams bounds the log and stream requests of each caller and the
	// idle time of a stream (see StreamLimits).
	Streams StreamLimits
	// Clock times idle streams (nil: the real clock).
	Clock clock.Clock
}

// api dispatches parsed requests to the handlers.
type api struct {
	cfg    Config
	routes []Route
	// readOnly is the unauthenticated subset.
	readOnly bool
	// limiter bounds each caller's log and stream requests.
	limiter *callerLimiter
	// streamTransport dials the runtime's streaming server (nil: the
	// proxy's default).
	streamTransport http.RoundTripper
}

// NewHandler returns the kubelet API served on port (10250): every
// request authenticated and authorized by cfg.Auth, then dispatched.
func NewHandler(cfg Config) (http.Handler, error) {
	if cfg.Auth == nil || cfg.Auth.Authenticator == nil || cfg.Auth.Authorizer == nil {
		return nil, errNoAuth
	}
	if err := validateRoutes(cfg.Routes); err != nil {
		return nil, err
	}
	if cfg.LogDir == "" {
		cfg.LogDir = "/var/log"
	}
	a := &api{cfg: cfg, routes: sortRoutes(cfg.Routes), limiter: newCallerLimiter(cfg.Streams.PerCaller)}
	if cfg.Streams.IdleTimeout > 0 {
		clk := cfg.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		a.streamTransport = &http.Transport{DialContext: idleDialer(cfg.Streams.IdleTimeout, clk)}
	}
	if cfg.DebuggingHandlers && cfg.ProfilingHandler && cfg.ContentionProfiling {
		runtime.SetBlockProfileRate(1)
	}
	return authFilter(cfg.NodeName, cfg.Auth, a.routes, cfg.FineGrainedAuthz, a), nil
}

// ReadOnlyHandler is the read-only API (readOnlyPort): /healthz, /pods
// and the routes marked ReadOnly, without authentication, as upstream.
// The debugging endpoints (including /runningpods/) answer 405 there.
func ReadOnlyHandler(src PodSource, routes []Route, checks ...HealthCheck) (http.Handler, error) {
	var ro []Route
	for _, r := range routes {
		if r.ReadOnly {
			ro = append(ro, r)
		}
	}
	if err := validateRoutes(ro); err != nil {
		return nil, err
	}
	return &api{cfg: Config{Pods: podSourceOnly{src}, Checks: checks}, routes: sortRoutes(ro), readOnly: true}, nil
}

// podSourceOnly adapts a PodSource for the read-only API, which never
// looks pods up by name.
type podSourceOnly struct{ PodSource }

func (podSourceOnly) GetPodByName(string, string) (*v1.Pod, bool) { return nil, false }

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, err := parsePath(r.URL.Path, a.routes)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if t.ep == epRoute {
		t.route.Handler.ServeHTTP(w, r)
		return
	}
	if debugEndpoints[t.ep] && (a.readOnly || !a.cfg.DebuggingHandlers) {
		if t.ep == epConfigz || t.ep == epDebugFlags {
			// Not installed at all without the debugging handlers.
			http.NotFound(w, r)
			return
		}
		http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
		return
	}
	if !allowed(t.ep, r.Method) {
		w.Header().Set("Allow", strings.Join(methods[t.ep], ", "))
		http.Error(w, fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path), http.StatusMethodNotAllowed)
		return
	}
	release, ok := a.limit(w, r, t)
	if !ok {
		return
	}
	defer release()
	switch t.ep {
	case epHealthz:
		a.healthz(w, r, t.rest)
	case epPods:
		PodsHandler(a.cfg.Pods).ServeHTTP(w, r)
	case epRunningPods:
		RunningPodsHandler(a.cfg.Pods).ServeHTTP(w, r)
	case epContainerLogs:
		a.containerLogs(w, r, t)
	case epExec, epAttach:
		a.stream(w, r, t)
	case epPortForward:
		a.portForward(w, r, t)
	case epRun:
		a.run(w, r, t)
	case epLogs:
		a.systemLogs(w, r)
	case epConfigz:
		if a.cfg.Configz == nil {
			// Nothing to show (a virtual node has no configuration file).
			http.NotFound(w, r)
			return
		}
		a.configz(w)
	case epPprof:
		a.pprof(w, r, t.rest)
	case epDebugFlags:
		a.debugFlags(w, r)
	default:
		http.NotFound(w, r)
	}
}

func allowed(ep endpoint, method string) bool {
	for _, m := range methods[ep] {
		if m == method {
			return true
		}
	}
	return false
}

func (a *api) healthz(w http.ResponseWriter, r *http.Request, check string) {
	checks := append([]HealthCheck{{Name: "ping", Check: func() error { return nil }}}, a.cfg.Checks...)
	if check == "" {
		HealthzHandler(checks...).ServeHTTP(w, r)
		return
	}
	for _, c := range checks {
		if c.Name == check {
			HealthzHandler(c).ServeHTTP(w, r)
			return
		}
	}
	http.NotFound(w, r)
}

// pod finds the target's pod; a UID in the path must match it.
func (a *api) pod(w http.ResponseWriter, t target) (*v1.Pod, bool) {
	p, ok := a.cfg.Pods.GetPodByName(t.namespace, t.pod)
	if !ok || (t.uid != "" && p.UID != types.UID(t.uid)) {
		http.Error(w, fmt.Sprintf("pod %s/%s does not exist", t.namespace, t.pod), http.StatusNotFound)
		return nil, false
	}
	return p, true
}

// hasContainer reports whether the pod's spec has the named container
// (app, init or ephemeral).
func hasContainer(p *v1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// stream serves exec and attach: the runtime prepares the session, and
// the client's upgraded connection (SPDY or WebSocket) is proxied to the
// runtime's streaming server, which negotiates the protocol with it.
func (a *api) stream(w http.ResponseWriter, r *http.Request, t target) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := a.pod(w, t)
	if !ok {
		return
	}
	if !hasContainer(p, t.container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %s/%s", t.container, p.Namespace, p.Name), http.StatusNotFound)
		return
	}
	so := StreamOptions{Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, TTY: opts.TTY}
	var cmd []string
	if t.ep == epExec {
		if cmd = r.URL.Query()["command"]; len(cmd) == 0 {
			http.Error(w, "no command given (query parameter \"command\")", http.StatusBadRequest)
			return
		}
	}
	if in, ok := a.cfg.Containers.(InProcessStreams); ok {
		name, uid := p.Namespace+"/"+p.Name, string(p.UID)
		if t.ep == epExec {
			remotecommand.ServeExec(w, r, in, name, uid, t.container, cmd, opts, a.cfg.Streams.IdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
		} else {
			remotecommand.ServeAttach(w, r, in, name, uid, t.container, opts, a.cfg.Streams.IdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
		}
		return
	}
	var u *url.URL
	if t.ep == epExec {
		u, err = a.cfg.Containers.GetExec(r.Context(), p, t.container, cmd, so)
	} else {
		u, err = a.cfg.Containers.GetAttach(r.Context(), p, t.container, so)
	}
	if err != nil {
		streaming.WriteError(err, w)
		return
	}
	proxyStream(w, r, u, a.streamTransport)
}

func (a *api) portForward(w http.ResponseWriter, r *http.Request, t target) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, ok := a.pod(w, t)
	if !ok {
		return
	}
	if in, ok := a.cfg.Containers.(InProcessStreams); ok {
		portforward.ServePortForward(w, r, in, p.Namespace+"/"+p.Name, string(p.UID), opts, a.cfg.Streams.IdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
		return
	}
	u, err := a.cfg.Containers.GetPortForward(r.Context(), p, opts.Ports)
	if err != nil {
		streaming.WriteError(err, w)
		return
	}
	proxyStream(w, r, u, a.streamTransport)
}

type proxyResponder struct{}

func (proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.ErrorS(err, "Proxying a stream to the runtime failed", "path", r.URL.Path)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// proxyStream hands an upgrade request over to the runtime's streaming
// server at u and copies both ways until either side closes.
func proxyStream(w http.ResponseWriter, r *http.Request, u *url.URL, transport http.RoundTripper) {
	h := proxy.NewUpgradeAwareHandler(u, transport, false, true, proxyResponder{})
	h.ServeHTTP(w, r)
}

// run serves POST /run/...: the command (query "cmd", split on spaces, as
// upstream) runs to completion and its output is the answer.
func (a *api) run(w http.ResponseWriter, r *http.Request, t target) {
	p, ok := a.pod(w, t)
	if !ok {
		return
	}
	if !hasContainer(p, t.container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %s/%s", t.container, p.Namespace, p.Name), http.StatusNotFound)
		return
	}
	cmd := strings.Fields(r.URL.Query().Get("cmd"))
	if len(cmd) == 0 {
		http.Error(w, "no command given (query parameter \"cmd\")", http.StatusBadRequest)
		return
	}
	out, err := a.cfg.Containers.RunInContainer(r.Context(), p, t.container, cmd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(out)
}

// systemLogs serves /logs/: files and directory listings under LogDir.
// Opening through an os.Root refuses every way out of it (.., absolute
// symlinks, symlinks pointing outside).
func (a *api) systemLogs(w http.ResponseWriter, r *http.Request) {
	if !a.cfg.SystemLogHandler {
		http.Error(w, "logs endpoint is disabled.", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/logs" {
		http.Redirect(w, r, "/logs/", http.StatusMovedPermanently)
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, "/logs/")
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." {
			http.Error(w, "path escapes the log directory", http.StatusBadRequest)
			return
		}
	}
	root, err := os.OpenRoot(a.cfg.LogDir)
	if err != nil {
		http.Error(w, "log directory unavailable", http.StatusNotFound)
		return
	}
	defer root.Close()
	http.StripPrefix("/logs", http.FileServerFS(root.FS())).ServeHTTP(w, r)
}

// configz serves the effective configuration as upstream shapes it:
// {"kubeletconfig": {...}}.
func (a *api) configz(w http.ResponseWriter) {
	b, err := json.Marshal(map[string]any{"kubeletconfig": a.cfg.Configz()})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (a *api) pprof(w http.ResponseWriter, r *http.Request, name string) {
	if !a.cfg.ProfilingHandler {
		http.Error(w, "profiling endpoint is disabled.", http.StatusMethodNotAllowed)
		return
	}
	switch name {
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		if r.URL.Path == "/debug/pprof" {
			http.Redirect(w, r, pprofPath, http.StatusMovedPermanently)
			return
		}
		pprof.Index(w, r)
	}
}

// debugFlags serves PUT /debug/flags/v: the body is the new klog
// verbosity.
func (a *api) debugFlags(w http.ResponseWriter, r *http.Request) {
	if !a.cfg.DebugFlagsHandler {
		http.Error(w, "flags endpoint is disabled.", http.StatusMethodNotAllowed)
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 64))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v := strings.TrimSpace(string(b))
	var level klog.Level
	if err := level.Set(v); err != nil {
		http.Error(w, fmt.Sprintf("invalid verbosity %q: %v", v, err), http.StatusBadRequest)
		return
	}
	klog.InfoS("Log verbosity changed through the kubelet API", "v", v)
	fmt.Fprintf(w, "successfully set klog.logging.verbosity to %s\n", v)
}

// statusError is an error with the HTTP status it should be answered with.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// NotFound marks err as a 404 for the log handler (a container or a
// previous instance that does not exist).
func NotFound(err error) error { return &statusError{code: http.StatusNotFound, err: err} }

func errorStatus(err error, fallback int) int {
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return fallback
}
