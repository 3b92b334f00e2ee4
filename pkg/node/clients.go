package node

import (
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ClientConfig says how to reach the API server.
type ClientConfig struct {
	// Kubeconfig is the kubeconfig file's path.
	Kubeconfig string
	// REST, when set, is the base configuration instead of Kubeconfig's
	// (the TLS-bootstrapped identity with its rotating client certificate,
	// see pkg/node/certs). It is copied, not changed.
	REST *rest.Config
	// UserAgent identifies this kubelet.
	UserAgent string
	// ContentType of requests (contentType), the client's default when
	// empty.
	ContentType string
	// QPS and Burst limit API requests (kubeAPIQPS, kubeAPIBurst).
	QPS   float32
	Burst int
	// EventQPS and EventBurst limit event writes on their own client
	// (eventRecordQPS, eventBurst), as upstream.
	EventQPS   float32
	EventBurst int
}

// Clients are the API clients of a node: one for everything but events
// and heartbeats, one for events, so a flood of events never starves
// status writes, and one for the heartbeats (the Node's status and its
// Lease) without a client-side rate limit, as upstream's, so thousands of
// pod status writes waiting for the first client's limit never make the
// node look dead.
type Clients struct {
	Kube   kubernetes.Interface
	Events kubernetes.Interface
	// Heartbeat writes the Node's status and Lease; Kube when nil.
	Heartbeat kubernetes.Interface
	// Watch is Kube's twin on a connection of its own, for watches that
	// carry many events (a virtual node's pods). The API server writes a
	// watch's events on the connection the watch came in on, behind the
	// responses to everything else on it; it buffers only 10 events for a
	// watch of one node's pods, and closes a watch that falls further
	// behind (which stalls every other watch of pods meanwhile). Kube when
	// nil.
	Watch kubernetes.Interface
	// Config is the REST config Kube was built from (for clients of other
	// API groups).
	Config *rest.Config
}

// NewClients builds the clients from cfg.REST, or else from the kubeconfig
// file.
func NewClients(cfg ClientConfig) (*Clients, error) {
	var rc *rest.Config
	if cfg.REST != nil {
		rc = rest.CopyConfig(cfg.REST)
	} else {
		var err error
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	}
	rc.UserAgent = cfg.UserAgent
	if cfg.ContentType != "" {
		rc.ContentType = cfg.ContentType
	}
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	ec := rest.CopyConfig(rc)
	ec.QPS, ec.Burst = cfg.EventQPS, cfg.EventBurst
	events, err := kubernetes.NewForConfig(ec)
	if err != nil {
		return nil, fmt.Errorf("API client for events: %w", err)
	}
	hc := rest.CopyConfig(rc)
	hc.QPS = -1 // no client-side rate limit
	heartbeat, err := kubernetes.NewForConfig(hc)
	if err != nil {
		return nil, fmt.Errorf("API client for heartbeats: %w", err)
	}
	wc := rest.CopyConfig(rc)
	// A dialer of its own keeps client-go from sharing Kube's transport,
	// so the watches get their own connection.
	wc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	watchClient, err := kubernetes.NewForConfig(wc)
	if err != nil {
		return nil, fmt.Errorf("API client for watches: %w", err)
	}
	return &Clients{Kube: kube, Events: events, Heartbeat: heartbeat, Watch: watchClient, Config: rc}, nil
}

// Watcher is the client for watches with many events (see Clients.Watch).
func (c *Clients) Watcher() kubernetes.Interface {
	if c.Watch != nil {
		return c.Watch
	}
	return c.Kube
}

// heartbeat is the client for the Node's status and Lease.
func (c *Clients) heartbeat() kubernetes.Interface {
	if c.Heartbeat != nil {
		return c.Heartbeat
	}
	return c.Kube
}
