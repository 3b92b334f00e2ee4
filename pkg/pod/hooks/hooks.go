// Package hooks runs container lifecycle handlers (postStart and preStop):
// exec in the container, an HTTP GET, or a sleep, with the upstream
// kubelet's semantics and failure messages. It is used from the pod's own
// worker, so a slow hook holds up only its pod.
package hooks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/prober"
)

// Event reasons (upstream's).
const (
	EventFailedPostStartHook   = "FailedPostStartHook"
	EventFailedPreStopHook     = "FailedPreStopHook"
	EventLifecycleHTTPFallback = "LifecycleHTTPFallback"
	// EventProtocolIgnored: an httpGet hook sets protocol, which hooks
	// ignore (HTTP/1.1 always), as upstream's do; only probes honour it.
	EventProtocolIgnored = "LifecycleProtocolIgnored"
)

// maxBody bounds how much of an HTTP hook's response is drained.
const maxBody = 10 << 10

// Runner runs lifecycle handlers.
type Runner struct {
	exec     prober.ExecFunc
	client   *http.Client
	recorder record.EventRecorder
	// UserAgent of HTTP hooks.
	userAgent string
}

// NewRunner returns a Runner that execs through exec (a CRI ExecSync) and
// records the HTTPS-to-HTTP fallback on recorder (may be nil). HTTP hooks
// do not verify TLS certificates (the kubelet cannot know the pod's) and
// carry no credentials.
func NewRunner(exec prober.ExecFunc, recorder record.EventRecorder, userAgent string) *Runner {
	return &Runner{
		exec:     exec,
		recorder: recorder,
		client: &http.Client{
			Transport: &http.Transport{
				TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the pod's certificate is not the kubelet's to judge, as upstream
				Proxy:             nil,
				DisableKeepAlives: true,
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > 0 && req.URL.Hostname() != via[0].URL.Hostname() {
					return http.ErrUseLastResponse
				}
				if len(via) >= 10 {
					return errors.New("stopped after 10 redirects")
				}
				return nil
			},
		},
		userAgent: userAgent,
	}
}

// Run runs handler h for the running instance containerID of container c.
// podIP is the host of an httpGet without one. timeout bounds an exec (0:
// none). On failure it returns upstream's message (for logs, never for
// events: it may hold secrets) and the error.
func (r *Runner) Run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler, timeout time.Duration) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := r.runExec(ctx, containerID, h.Exec.Command, timeout)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podspec.Format(pod), err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, pod, c, podIP, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podspec.Format(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := sleep(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podspec.Format(pod), err), err
		}
		return "", nil
	case h.TCPSocket != nil:
		// Kept in the API for compatibility only: upstream fails such a
		// hook as an invalid handler, and so does this kubelet.
	}
	err := fmt.Errorf("%s: %v", RefusedInvalidHandler, h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// RefusedInvalidHandler starts the error of a handler this kubelet cannot
// run: a tcpSocket one (deprecated, never run by upstream either) or none.
const RefusedInvalidHandler = "invalid handler"

func (r *Runner) runExec(ctx context.Context, id string, cmd []string, timeout time.Duration) (string, error) {
	if r.exec == nil {
		return "", errors.New("exec hooks are not supported by this kubelet")
	}
	stdout, stderr, code, err := r.exec(ctx, id, cmd, timeout)
	out := string(append(append([]byte{}, stdout...), stderr...))
	if err != nil {
		return out, err
	}
	if code != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out)
	}
	return out, nil
}

func sleep(ctx context.Context, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		metrics.LifecycleHandlerSleepTerminated.Inc()
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

// ResolvePort turns a handler's port (a number, a number as a string, or
// the name of a container port) into a port number.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return -1, fmt.Errorf("couldn't find port: %v in %v", p.String(), c.Name)
}

// Request builds the GET of an httpGet handler.
func Request(ctx context.Context, g *v1.HTTPGetAction, c *v1.Container, podIP, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, errors.New("the pod has no IP to send the request to")
	}
	port, err := ResolvePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept")
	}
	req.Host = req.Header.Get("Host")
	return req, nil
}

// runHTTP sends the GET. Only a failed request fails the hook: the status
// code is not looked at, as upstream. An HTTPS request answered in plain
// HTTP is retried over HTTP (without an Authorization header), with a
// warning event.
func (r *Runner) runHTTP(ctx context.Context, pod *v1.Pod, c *v1.Container, podIP string, g *v1.HTTPGetAction) error {
	req, err := Request(ctx, g, c, podIP, r.userAgent)
	if err != nil {
		return err
	}
	if g.Protocol != nil && *g.Protocol != v1.HTTPProtocolHTTP1 {
		klog.FromContext(ctx).Info("Lifecycle hook protocol ignored", "pod", klog.KObj(pod), "container", c.Name, "protocol", *g.Protocol)
		if r.recorder != nil {
			r.recorder.Eventf(pod, v1.EventTypeWarning, EventProtocolIgnored, "httpGet lifecycle hook of container %s asks for protocol %s, which lifecycle hooks ignore (HTTP/1.1), as upstream's do; only probes honour it", c.Name, *g.Protocol)
		}
	}
	resp, err := r.client.Do(req)
	drain(resp)
	if err != nil && gotHTTPResponse(err) {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, herr := r.client.Do(retry)
		drain(resp)
		if herr == nil {
			metrics.LifecycleHandlerHTTPFallbacks.Inc()
			if r.recorder != nil {
				r.recorder.Event(pod, v1.EventTypeWarning, EventLifecycleHTTPFallback,
					fmt.Sprintf("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host))
			}
			return nil
		}
	}
	return err
}

func gotHTTPResponse(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

func drain(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
}
