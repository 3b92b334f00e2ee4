// Package virtualnodes reads the virtual nodes configuration file
// (--virtual-nodes-config): which virtual nodes one kubelet process runs,
// each with its provider, and whether the real node runs beside them.
//
//	apiVersion: gokubelet.io/v1alpha1
//	kind: VirtualNodes
//	kubeconfig: /etc/gokubelet/virtual-nodes.kubeconfig  # identity (default: --kubeconfig)
//	realNode: true            # also run this machine's node (default true)
//	instance: lab-1           # owner label value (default: the hostname)
//	address: 192.0.2.10       # the nodes' InternalIP (default: --node-ip, else the default-route IP)
//	kubeAPIQPS: 1000          # the virtual nodes' shared client (default 1000)
//	kubeAPIBurst: 2000        # (default 2000)
//	nodes:
//	- name: vk-remote
//	  provider: kubernetes
//	  providerConfig: {kubeconfig: target.kubeconfig, namespacePrefix: "vk-"}
//	  port: 10260             # its kubelet API port (required, unique)
//	  labels: {example.com/pool: burst}
//	  taints: []              # default: virtual-kubelet.io/provider=<provider>:NoSchedule
//	  capacity: {pods: "500"} # overrides the provider's
//	  kubeconfig: ""          # this node's own identity (a kubeconfig of system:node:<name>)
//	  identity: bootstrap     # without a kubeconfig (default): obtain system:node:<name> by a CSR,
//	                          # the file's identity bootstrapping it; shared: act as the file's identity
//	  podSync: {workers: 50, statusWorkers: 100, retryBase: 200ms, retryMax: 2m,
//	            retryQPS: 0, pollInterval: 2s, resyncInterval: 1m}
//
// Decoding is strict (an unknown field is an error naming it), relative
// paths start at the file's folder, and every error names the node and
// field. The kubelet re-reads the file while it runs (Watch): nodes added,
// removed or changed take effect without a restart; the top-level fields
// take effect at the next start.
package virtualnodes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
)

// APIVersion and Kind of the file.
const (
	APIVersion = "gokubelet.io/v1alpha1"
	Kind       = "VirtualNodes"
)

// Defaults.
const (
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst limit the virtual nodes'
	// shared API client. Every pod a provider starts is at least one status
	// write, so this is a ceiling on pods per second across the process's
	// virtual nodes: it is set above what an API server carries (a small
	// one writes a few hundred pod statuses per second), so the server's
	// API Priority and Fairness, not the client, decides; it still bounds
	// a client gone wrong. Heartbeats (Node status, Lease) have their own
	// client without a limit.
	DefaultKubeAPIQPS   = 1000
	DefaultKubeAPIBurst = 2000
	// TaintKey is the default taint's key (the Virtual Kubelet
	// convention, so existing tolerations work): pods must tolerate it to
	// run on a virtual node.
	TaintKey = "virtual-kubelet.io/provider"
	// LabelInstance marks the nodes a process registered (value: the
	// instance); LabelType is the Virtual Kubelet convention.
	LabelInstance = "node.gokubelet.io/virtual-nodes-instance"
	LabelType     = "type"
	TypeValue     = "virtual-kubelet"
)

// Config is the file.
type Config struct {
	metav1.TypeMeta `json:",inline"`
	// Kubeconfig is the virtual nodes' identity in the API server.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// RealNode runs the machine's own node too (default true).
	RealNode *bool `json:"realNode,omitempty"`
	// Instance is the value of LabelInstance on the nodes registered.
	Instance string `json:"instance,omitempty"`
	// Address is the nodes' InternalIP.
	Address string `json:"address,omitempty"`
	// KubeAPIQPS and KubeAPIBurst limit the virtual nodes' shared client.
	KubeAPIQPS   *float32 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst *int32   `json:"kubeAPIBurst,omitempty"`
	// ServerTLSBootstrap: each node serves its kubelet API with a
	// certificate it requests through a kubernetes.io/kubelet-serving CSR
	// for system:node:<name> (made with the node's identity), renewed as
	// the kubelet's own; false: a self-signed one. Unset: the kubelet's
	// serverTLSBootstrap.
	ServerTLSBootstrap *bool `json:"serverTLSBootstrap,omitempty"`
	// Nodes are the virtual nodes.
	Nodes []Node `json:"nodes"`
}

// Node is one virtual node.
type Node struct {
	Name           string            `json:"name"`
	Provider       string            `json:"provider"`
	ProviderConfig json.RawMessage   `json:"providerConfig,omitempty"`
	Port           int32             `json:"port"`
	Labels         map[string]string `json:"labels,omitempty"`
	// Taints are set at registration; nil gives the default taint, an
	// empty list none.
	Taints   []v1.Taint        `json:"taints"`
	Capacity map[string]string `json:"capacity,omitempty"`
	// Kubeconfig is the node's own identity (system:node:<name>); then
	// Identity stays empty.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Identity, for a node without a Kubeconfig: "bootstrap" (the
	// default) obtains the node's own identity system:node:<name> (a
	// client certificate from a CSR to the kube-apiserver-client-kubelet
	// signer, made with the file's identity, rotated as a kubelet's), so
	// the Node authorizer and NodeRestriction confine it to its own Node,
	// pods, Secrets and tokens, as they confine a real node. "shared"
	// acts as the file's identity, which then needs the wider ClusterRole
	// of hack/virtual-nodes-rbac-shared.yaml.
	Identity string  `json:"identity,omitempty"`
	PodSync  PodSync `json:"podSync,omitempty"`
}

// Node.Identity's values: a node identity obtained by a CSR (the default
// without a kubeconfig), or the file's identity.
const (
	IdentityBootstrap = "bootstrap"
	IdentityShared    = "shared"
)

// PodSync tunes the node's pod work queue (zero: the engine's defaults).
type PodSync struct {
	Workers int `json:"workers,omitempty"`
	// StatusWorkers write pod statuses to the API server in parallel.
	StatusWorkers  int             `json:"statusWorkers,omitempty"`
	RetryBase      metav1.Duration `json:"retryBase,omitempty"`
	RetryMax       metav1.Duration `json:"retryMax,omitempty"`
	RetryQPS       float64         `json:"retryQPS,omitempty"`
	RetryBurst     int             `json:"retryBurst,omitempty"`
	PollInterval   metav1.Duration `json:"pollInterval,omitempty"`
	ResyncInterval metav1.Duration `json:"resyncInterval,omitempty"`
}

// RunsRealNode reports whether the real node runs beside the virtual ones.
func (c *Config) RunsRealNode() bool { return c.RealNode == nil || *c.RealNode }

// BootstrapsServing reports whether the virtual nodes request their
// serving certificates by CSR: the file's serverTLSBootstrap when it sets
// one, else the kubelet's.
func BootstrapsServing(file *bool, kubelet bool) bool {
	if file == nil {
		return kubelet
	}
	return *file
}

// QPS and Burst of the shared client.
func (c *Config) QPS() float32 {
	if c.KubeAPIQPS == nil {
		return DefaultKubeAPIQPS
	}
	return *c.KubeAPIQPS
}

// Burst of the shared client.
func (c *Config) Burst() int {
	if c.KubeAPIBurst == nil {
		return DefaultKubeAPIBurst
	}
	return int(*c.KubeAPIBurst)
}

// CapacityList parses the node's capacity overrides (validated by Load).
func (n *Node) CapacityList() v1.ResourceList {
	out := v1.ResourceList{}
	for k, v := range n.Capacity {
		if q, err := resource.ParseQuantity(v); err == nil {
			out[v1.ResourceName(k)] = q
		}
	}
	return out
}

// EffectiveTaints are the node's taints: the default one when none are
// configured (nil).
func (n *Node) EffectiveTaints() []v1.Taint {
	if n.Taints == nil {
		return []v1.Taint{{Key: TaintKey, Value: n.Provider, Effect: v1.TaintEffectNoSchedule}}
	}
	return n.Taints
}

// Equal reports whether two node definitions are the same (a changed one
// is restarted on reload).
func (n *Node) Equal(o *Node) bool {
	a, _ := json.Marshal(n)
	b, _ := json.Marshal(o)
	return bytes.Equal(a, b)
}

// Load reads, decodes strictly, defaults and validates the file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("virtual nodes config: %w", err)
	}
	c, err := Decode(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("virtual nodes config %s: %w", path, err)
	}
	return c, nil
}

// Decode decodes and validates a file's content; relative paths start at
// dir.
func Decode(data []byte, dir string) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, err
	}
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return nil, fmt.Errorf("apiVersion/kind must be %s %s, got %q %q", APIVersion, Kind, c.APIVersion, c.Kind)
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.Kubeconfig = abs(c.Kubeconfig)
	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.Kubeconfig = abs(n.Kubeconfig)
		if n.Kubeconfig == "" && n.Identity == "" {
			n.Identity = IdentityBootstrap
		}
	}
	if errs := c.validate(); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("invalid:\n  %s", strings.Join(msgs, "\n  "))
	}
	return &c, nil
}

func (c *Config) validate() field.ErrorList {
	var errs field.ErrorList
	if c.Address != "" && net.ParseIP(c.Address) == nil {
		errs = append(errs, field.Invalid(field.NewPath("address"), c.Address, "not an IP address"))
	}
	if c.Instance != "" {
		for _, m := range validation.IsValidLabelValue(c.Instance) {
			errs = append(errs, field.Invalid(field.NewPath("instance"), c.Instance, m))
		}
	}
	if c.KubeAPIQPS != nil && *c.KubeAPIQPS < 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIQPS"), *c.KubeAPIQPS, "must not be negative"))
	}
	if c.KubeAPIBurst != nil && *c.KubeAPIBurst < 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeAPIBurst"), *c.KubeAPIBurst, "must not be negative"))
	}
	names := map[string]int{}
	ports := map[int32]string{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		p := field.NewPath("nodes").Index(i)
		if n.Name != "" {
			p = field.NewPath("nodes").Key(n.Name)
		}
		if n.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, m := range validation.IsDNS1123Subdomain(n.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), n.Name, m))
			}
			if j, dup := names[n.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also nodes[%d])", n.Name, j)))
			}
			names[n.Name] = i
		}
		if n.Provider == "" {
			errs = append(errs, field.Required(p.Child("provider"), "e.g. mock or kubernetes"))
		}
		switch n.Identity {
		case "":
		case IdentityBootstrap, IdentityShared:
			if n.Kubeconfig != "" {
				errs = append(errs, field.Invalid(p.Child("identity"), n.Identity, "a node with its own kubeconfig acts as that identity; leave identity empty"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("identity"), n.Identity, []string{IdentityBootstrap, IdentityShared}))
		}
		if n.Port <= 0 || n.Port > 65535 {
			errs = append(errs, field.Invalid(p.Child("port"), n.Port, "the node's kubelet API port is required (1-65535)"))
		} else if other, dup := ports[n.Port]; dup {
			errs = append(errs, field.Duplicate(p.Child("port"), fmt.Sprintf("%d (also node %s)", n.Port, other)))
		} else {
			ports[n.Port] = n.Name
		}
		if err := nodestatus.ValidateNodeLabels(n.Labels); err != nil {
			errs = append(errs, field.Invalid(p.Child("labels"), "", strings.TrimPrefix(err.Error(), "--node-labels: ")))
		}
		for j, t := range n.Taints {
			tp := p.Child("taints").Index(j)
			for _, m := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, field.Invalid(tp.Child("key"), t.Key, m))
			}
			switch t.Effect {
			case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
			default:
				errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
			}
		}
		keys := make([]string, 0, len(n.Capacity))
		for k := range n.Capacity {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			q, err := resource.ParseQuantity(n.Capacity[k])
			if err != nil || q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child("capacity").Key(k), n.Capacity[k], "must be a non-negative quantity"))
			}
		}
		ps := p.Child("podSync")
		if n.PodSync.Workers < 0 {
			errs = append(errs, field.Invalid(ps.Child("workers"), n.PodSync.Workers, "must not be negative"))
		}
		if n.PodSync.StatusWorkers < 0 {
			errs = append(errs, field.Invalid(ps.Child("statusWorkers"), n.PodSync.StatusWorkers, "must not be negative"))
		}
		if n.PodSync.RetryQPS < 0 {
			errs = append(errs, field.Invalid(ps.Child("retryQPS"), n.PodSync.RetryQPS, "must not be negative"))
		}
		for name, d := range map[string]metav1.Duration{"retryBase": n.PodSync.RetryBase, "retryMax": n.PodSync.RetryMax,
			"pollInterval": n.PodSync.PollInterval, "resyncInterval": n.PodSync.ResyncInterval} {
			if d.Duration < 0 {
				errs = append(errs, field.Invalid(ps.Child(name), d.Duration.String(), "must not be negative"))
			}
		}
	}
	return errs
}
