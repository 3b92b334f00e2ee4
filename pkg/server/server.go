package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// HealthCheck is one named liveness check.
type HealthCheck struct {
	Name  string
	Check func() error
}

// PodSource is what the pod endpoints read.
type PodSource interface {
	// Pods returns the pods bound to this node, with their latest status.
	Pods() []*v1.Pod
	// RunningPods returns the pods found in the runtime, as pods with
	// metadata and containers (name, image) only.
	RunningPods(ctx context.Context) ([]*v1.Pod, error)
}

// HealthzHandler answers "ok" when every check passes, else 500 naming the
// failed checks.
func HealthzHandler(checks ...HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		var verbose strings.Builder
		for _, c := range checks {
			if err := c.Check(); err != nil {
				failed = append(failed, c.Name)
				fmt.Fprintf(&verbose, "[-]%s failed: %v\n", c.Name, err)
				klog.V(2).InfoS("Health check failed", "check", c.Name, "err", err)
			} else {
				fmt.Fprintf(&verbose, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%shealthz check failed: %s\n", verbose.String(), strings.Join(failed, ","))
			return
		}
		if r.URL.Query().Has("verbose") {
			fmt.Fprintf(w, "%shealthz check passed\n", verbose.String())
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// PodsHandler serves /pods: the node's pods as a v1 PodList.
func PodsHandler(src PodSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writePodList(w, src.Pods())
	})
}

// RunningPodsHandler serves /runningpods/: the pods in the runtime.
func RunningPodsHandler(src PodSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pods, err := src.RunningPods(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writePodList(w, pods)
	})
}

func writePodList(w http.ResponseWriter, pods []*v1.Pod) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: make([]v1.Pod, 0, len(pods))}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&list); err != nil {
		klog.ErrorS(err, "Failed to write pod list")
	}
}

// Listen binds addr (host:port). Binding is separate from serving so start-up
// can fail early and clearly on a port in use.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}

// Serve serves h on l until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	return serve(ctx, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, l)
}

// ServeTLS serves the kubelet API on l with TLS until ctx ends. Streams
// (logs -f, exec, attach, port-forward) may last for hours, as upstream
// allows (4h read and write timeouts).
func ServeTLS(ctx context.Context, l net.Listener, h http.Handler, cfg *tls.Config) error {
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         cfg,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ReadTimeout:       4 * time.Hour,
		WriteTimeout:      4 * time.Hour,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          log.New(tlsErrorLog{}, "", 0),
	}
	return serve(ctx, srv, tls.NewListener(l, cfg))
}

// tlsErrorLog sends net/http's own errors (failed handshakes) to klog at
// a verbosity that keeps scanners from flooding the log.
type tlsErrorLog struct{}

func (tlsErrorLog) Write(p []byte) (int, error) {
	klog.V(4).InfoS("Kubelet API server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}

func serve(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		// Hijacked streams (exec, port-forward) are not tracked by
		// Shutdown; they end with the process.
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
