package server

import (
	"context"
	"net"
	"net/http"
	"sync"

	"k8s.io/klog/v2"
)

// APIServer is the kubelet API bound to its address: a runnable serving
// the handler with TLS until its context ends, while the serving
// certificate files and the client CA bundle are watched for changes.
type APIServer struct {
	l    net.Listener
	h    http.Handler
	tls  *TLS
	auth *Auth
	// what is logged when serving starts.
	authzMode string
}

// ListenAPI binds the kubelet API's address (host:port) now, so that a port
// in use fails the start clearly; serving begins with Start. h is the
// handler from NewHandler, built with auth; t is from BuildTLS. authzMode
// is only logged.
func ListenAPI(addr string, h http.Handler, t *TLS, auth *Auth, authzMode string) (*APIServer, error) {
	l, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	return &APIServer{l: l, h: h, tls: t, auth: auth, authzMode: authzMode}, nil
}

// Addr is the bound address.
func (s *APIServer) Addr() net.Addr { return s.l.Addr() }

// Close releases the listener of a server that will not be started.
func (s *APIServer) Close() error { return s.l.Close() }

// Start serves until ctx ends.
func (s *APIServer) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	bg, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); s.auth.Run(bg) }()
	go func() { defer wg.Done(); s.tls.Run(bg) }()
	klog.FromContext(ctx).Info("Serving the kubelet API", "address", s.l.Addr().String(), "certificate", s.tls.Source, "authorization", s.authzMode)
	return ServeTLS(ctx, s.l, s.h, s.tls.Config)
}
