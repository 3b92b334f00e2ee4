// Package nodeset runs the virtual nodes of a VirtualNodes file (see
// docs/virtual-nodes.md) beside or instead of the real node, and follows
// the file while the process runs: each virtual node gets its own node
// core and virtual engine over its provider.
package nodeset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
	"github.com/gokubelet/kubelet/pkg/engine/virtual"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/providers/kubernetes"
	"github.com/gokubelet/kubelet/pkg/providers/mock"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// Providers are the provider types a virtual node may name.
var Providers = map[string]provider.Factory{
	"mock":       mock.New,
	"kubernetes": kubernetes.New,
}

// Timings of the virtual nodes' supervisor.
const (
	// drainTimeout bounds how long a virtual node removed from the
	// configuration waits for its provider to delete its pods.
	drainTimeout = 2 * time.Minute
	// restartBackoffMax bounds the wait before a failed virtual node is
	// started again.
	restartBackoffMax = 30 * time.Second
)

// Set runs the virtual nodes of a VirtualNodes file beside (or
// instead of) the real node, and follows the file while it runs: a node
// added is started, a node removed is drained (its provider's pods
// deleted) and its Node object deleted, a changed node is restarted. On
// start, Nodes this process registered earlier (labelled with its
// instance) that the file no longer lists are deleted. Stopping the
// kubelet leaves every virtual node's pods running; a restarted kubelet
// adopts them.
//
// Every virtual node has its own node core (registration, status, Lease,
// status writer, events) and engine; they share the API clients and the
// service informer of their identity.
type Set struct {
	path    string
	content []byte
	cfg     *virtualnodes.Config
	hostIPs []string
	// defaultKubeconfig is --kubeconfig.
	defaultKubeconfig string
	kc                *kubeletconfig.Settings
	version           string

	mu      sync.Mutex
	shared  map[string]*sharedClients // by kubeconfig path
	running map[string]*virtualNode
	// failing names nodes waiting to be started again after a failure.
	failing map[string]error

	// newClients builds the clients of an identity (tests replace it).
	newClients func(kubeconfig string) (*node.Clients, error)
	// watchInterval is how often the file is re-read.
	watchInterval time.Duration

	regOnce sync.Once
	reg     *registry

	// API builds the kubelet API of one virtual node, served at the port
	// its Node advertises (pkg/kubelet sets it before Start; nil serves
	// nothing, as in tests). It binds the port; the node's loops start
	// it, and Close releases the port if they never do.
	API func(ctx context.Context, a NodeAPI) (APIServer, error)
}

// NodeAPI is what a virtual node's kubelet API is built from.
type NodeAPI struct {
	Name string
	// Port is the node's port (its daemonEndpoints).
	Port int32
	// HostIPs are the node's addresses.
	HostIPs []string
	// CertDir is the node's own directory for its serving certificate,
	// under --root-dir ("" without one).
	CertDir string
	// ServerTLSBootstrap is the file's serverTLSBootstrap (nil: unset,
	// the kubelet's applies).
	ServerTLSBootstrap *bool
	// Clients act as the node's identity (webhook authentication and
	// authorization, events).
	Clients *node.Clients
	// Engine serves the pods (/pods, /runningpods/, logs, exec, attach,
	// port-forward) and its provider the streams.
	Engine *virtual.Engine
	// Core is the node's core (events on the Node).
	Core *node.Core
}

// APIServer is a virtual node's bound kubelet API.
type APIServer interface {
	runnable.Runnable
	io.Closer
}

// sharedClients are the clients of one identity and their service
// informer.
type sharedClients struct {
	clients  *node.Clients
	services virtual.ServiceLister
}

// virtualNode is one running virtual node.
type virtualNode struct {
	def    virtualnodes.Node
	cancel context.CancelFunc
	done   chan struct{}
	// prov and stopProvider outlive the node's loops: removing a node
	// drains its pods through the provider after its engine stopped.
	mu           sync.Mutex
	prov         provider.Provider
	stopProvider context.CancelFunc
	engine       *virtual.Engine
	clients      *node.Clients
}

// New prepares the virtual nodes of s.VirtualNodes (read from
// s.VirtualNodesConfigFile); hostIPs are their addresses unless the file
// sets one, version the kubelet version they report.
func New(s *kubeletconfig.Settings, hostIPs []string, version string) (*Set, error) {
	content, err := os.ReadFile(s.VirtualNodesConfigFile)
	if err != nil {
		return nil, fmt.Errorf("virtual nodes config: %w", err)
	}
	if s.VirtualNodes.Address != "" {
		hostIPs = []string{s.VirtualNodes.Address}
	}
	for _, n := range s.VirtualNodes.Nodes {
		if _, ok := Providers[n.Provider]; !ok {
			return nil, fmt.Errorf("virtual nodes config %s: node %s: unknown provider %q (known: %s)", s.VirtualNodesConfigFile, n.Name, n.Provider, providerNames())
		}
	}
	v := &Set{
		version:           version,
		path:              s.VirtualNodesConfigFile,
		content:           content,
		cfg:               s.VirtualNodes,
		hostIPs:           hostIPs,
		defaultKubeconfig: s.KubeconfigPath,
		kc:                s,
		shared:            map[string]*sharedClients{},
		running:           map[string]*virtualNode{},
		failing:           map[string]error{},
		watchInterval:     virtualnodes.DefaultWatchInterval,
	}
	v.newClients = func(kubeconfig string) (*node.Clients, error) {
		return node.NewClients(node.ClientConfig{
			Kubeconfig:  kubeconfig,
			UserAgent:   "kubelet/" + version + " (virtual nodes)",
			ContentType: s.Config.ContentType,
			QPS:         s.VirtualNodes.QPS(),
			Burst:       s.VirtualNodes.Burst(),
			EventQPS:    float32(ptr.Deref(s.Config.EventRecordQPS, 0)),
			EventBurst:  int(s.Config.EventBurst),
		})
	}
	return v, nil
}

func providerNames() string {
	var names []string
	for n := range Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}

// instance is the value of the instance label.
func (v *Set) instance() string {
	if v.cfg.Instance != "" {
		return v.cfg.Instance
	}
	h, _ := os.Hostname()
	if h == "" {
		return "default"
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// Start runs the virtual nodes until ctx ends.
func (v *Set) Start(ctx context.Context) error {
	log := klog.FromContext(ctx)
	if _, err := v.clientsFor(ctx, ""); err != nil {
		return err
	}
	v.removeStale(ctx)
	for _, n := range v.cfg.Nodes {
		v.start(ctx, n)
	}
	log.Info("Virtual nodes running", "nodes", len(v.cfg.Nodes), "config", v.path, "instance", v.instance())
	virtualnodes.Watch(ctx, v.path, v.watchInterval, v.content, func(c *virtualnodes.Config) { v.reconcile(ctx, c) })
	// Stopping: every node stops, nothing is drained or deleted.
	nodes := v.runningNodes()
	for _, n := range nodes {
		n.cancel()
	}
	for _, n := range nodes {
		<-n.done
		n.mu.Lock()
		if n.stopProvider != nil {
			n.stopProvider()
		}
		n.mu.Unlock()
	}
	return nil
}

// reconcile applies a changed file: removed nodes are drained and
// deleted, changed ones restarted, new ones started. Changes of the
// top-level fields wait for a restart.
func (v *Set) reconcile(ctx context.Context, c *virtualnodes.Config) {
	log := klog.FromContext(ctx)
	if c.Kubeconfig != v.cfg.Kubeconfig || c.RunsRealNode() != v.cfg.RunsRealNode() || c.Instance != v.cfg.Instance ||
		c.Address != v.cfg.Address || c.QPS() != v.cfg.QPS() || c.Burst() != v.cfg.Burst() ||
		virtualnodes.BootstrapsServing(c.ServerTLSBootstrap, false) != virtualnodes.BootstrapsServing(v.cfg.ServerTLSBootstrap, false) ||
		virtualnodes.BootstrapsServing(c.ServerTLSBootstrap, true) != virtualnodes.BootstrapsServing(v.cfg.ServerTLSBootstrap, true) {
		log.Info("Top-level fields of the virtual nodes config changed; they take effect at the next start")
	}
	wanted := map[string]virtualnodes.Node{}
	for _, n := range c.Nodes {
		if _, ok := Providers[n.Provider]; !ok {
			log.Error(nil, "Unknown provider; the node is not started", "virtualNode", n.Name, "provider", n.Provider, "known", providerNames())
			continue
		}
		wanted[n.Name] = n
	}
	v.mu.Lock()
	var removed, changed []*virtualNode
	for name, n := range v.running {
		w, ok := wanted[name]
		switch {
		case !ok:
			removed = append(removed, n)
		case !w.Equal(&n.def):
			changed = append(changed, n)
		}
	}
	v.mu.Unlock()
	for _, n := range removed {
		v.remove(ctx, n)
	}
	for _, n := range changed {
		log.Info("Virtual node changed; restarting it", "virtualNode", n.def.Name)
		v.stop(n)
	}
	v.mu.Lock()
	var toStart []virtualnodes.Node
	for _, n := range c.Nodes {
		if _, ok := wanted[n.Name]; !ok {
			continue
		}
		if _, running := v.running[n.Name]; !running {
			toStart = append(toStart, n)
		}
	}
	v.cfg.Nodes = c.Nodes
	v.mu.Unlock()
	for _, n := range toStart {
		v.start(ctx, n)
	}
}

// start runs a node in the background, started again with back-off
// when it fails.
func (v *Set) start(parent context.Context, def virtualnodes.Node) {
	if err := v.registry().add(def.Name); err != nil {
		klog.FromContext(parent).Error(err, "Recording the virtual node as registered by this process; if it is taken out of the config while the kubelet is stopped, its Node stays", "virtualNode", def.Name)
	}
	ctx, cancel := context.WithCancel(parent)
	n := &virtualNode{def: def, cancel: cancel, done: make(chan struct{})}
	v.mu.Lock()
	v.running[def.Name] = n
	v.mu.Unlock()
	log := klog.FromContext(parent).WithValues("virtualNode", def.Name, "provider", def.Provider)
	ctx = klog.NewContext(ctx, log)
	go func() {
		defer close(n.done)
		backoff := time.Second
		for {
			err := v.run(ctx, n)
			if ctx.Err() != nil {
				return
			}
			v.mu.Lock()
			v.failing[def.Name] = err
			v.mu.Unlock()
			log.Error(err, "Virtual node failed; starting it again", "after", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, restartBackoffMax)
		}
	}()
}

// run builds one virtual node (provider, core, engine) and runs it until
// ctx ends or a part fails.
func (v *Set) run(ctx context.Context, n *virtualNode) error {
	def := n.def
	sc, err := v.clientsFor(ctx, def.Kubeconfig)
	if err != nil {
		return err
	}
	clients := sc.clients
	var identity *nodeIdentity
	if def.Identity == virtualnodes.IdentityBootstrap {
		if identity, err = v.newNodeIdentity(ctx, def); err != nil {
			return err
		}
		clients = identity.clients
	}
	factory := Providers[def.Provider]
	provCtx, stopProvider := context.WithCancel(context.WithoutCancel(ctx))
	prov, err := factory(provCtx, provider.InitConfig{
		NodeName:  def.Name,
		Config:    def.ProviderConfig,
		ConfigDir: filepath.Dir(v.path),
		Client:    clients.Kube,
		Objects:   envvars.ClientObjects{Client: clients.Kube},
		StateDir:  v.providerStateDir(def),
	})
	if err != nil {
		stopProvider()
		return fmt.Errorf("provider %s: %w", def.Provider, err)
	}
	n.mu.Lock()
	if n.stopProvider != nil {
		n.stopProvider() // an earlier attempt's
	}
	n.prov, n.stopProvider, n.clients = prov, stopProvider, clients
	n.mu.Unlock()
	providerDone := make(chan error, 1)
	if r, ok := prov.(runnable.Runnable); ok {
		go func() { providerDone <- r.Start(klog.NewContext(provCtx, klog.FromContext(ctx).WithName("provider"))) }()
	}

	nodeLabels := map[string]string{virtualnodes.LabelType: virtualnodes.TypeValue, virtualnodes.LabelInstance: v.instance()}
	for k, val := range def.Labels {
		nodeLabels[k] = val
	}
	kc := v.kc.Config
	var ips []net.IP
	for _, ip := range v.hostIPs {
		if p := net.ParseIP(ip); p != nil {
			ips = append(ips, p)
		}
	}
	core, err := node.New(ctx, node.Options{
		Config: nodestatus.Config{
			NodeName:       def.Name,
			Hostname:       def.Name,
			NodeLabels:     nodeLabels,
			Taints:         def.EffectiveTaints(),
			NodeIPs:        ips,
			KubeletPort:    def.Port,
			KubeletVersion: v.version,
		},
		Facts: &virtual.Facts{Provider: prov, ProviderType: def.Provider, NodeName: def.Name,
			HostIPs: v.hostIPs, Capacity: def.CapacityList()},
		Clients:                   clients,
		RegisterNode:              true,
		LeaseDurationSeconds:      kc.NodeLeaseDurationSeconds,
		NodeStatusUpdateFrequency: kc.NodeStatusUpdateFrequency.Duration,
		NodeStatusReportFrequency: kc.NodeStatusReportFrequency.Duration,
		StatusWorkers:             cmp.Or(def.PodSync.StatusWorkers, virtual.DefaultStatusWorkers),
	})
	if err != nil {
		return err
	}
	defer core.Shutdown()
	ps := def.PodSync
	eng, err := virtual.New(virtual.Config{
		NodeName:       def.Name,
		ProviderType:   def.Provider,
		HostIPs:        v.hostIPs,
		Workers:        ps.Workers,
		RetryBase:      ps.RetryBase.Duration,
		RetryMax:       ps.RetryMax.Duration,
		RetryQPS:       ps.RetryQPS,
		RetryBurst:     ps.RetryBurst,
		PollInterval:   ps.PollInterval.Duration,
		ResyncInterval: ps.ResyncInterval.Duration,
	}, virtual.Deps{Core: core, Client: clients.Kube, WatchClient: clients.Watcher(), Provider: prov, Services: sc.services})
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.engine = eng
	n.mu.Unlock()
	// The kubelet API at the advertised port, bound now and released when
	// the node stops, whether or not it started serving. It starts once
	// the Node is registered, before the provider is ready, so a node
	// whose backend is away still answers.
	var api APIServer
	if v.API != nil {
		certDir := ""
		if d := v.stateDir(); d != "" {
			certDir = filepath.Join(d, "nodes", def.Name, "pki")
		}
		api, err = v.API(ctx, NodeAPI{Name: def.Name, Port: def.Port, HostIPs: v.hostIPs, CertDir: certDir,
			ServerTLSBootstrap: v.cfg.ServerTLSBootstrap, Clients: clients, Engine: eng, Core: core})
		if err != nil {
			return fmt.Errorf("kubelet API on port %d: %w", def.Port, err)
		}
		if api != nil {
			defer api.Close()
		}
	}
	// The Node registers first (NotReady while the provider's backend is
	// not there: its NodeStatus says why); pods wait for the provider.
	var g runnable.Group
	if identity != nil {
		g.Stage("identity").Add("client-certificate", identity)
	}
	core.AddTo(g.Stage("core"))
	if api != nil {
		g.Stage("api").Add("kubelet-api", api)
	}
	g.Stage("provider").Add("provider", &providerGate{prov: prov, done: providerDone, name: def.Provider})
	eng.AddTo(g.Stage("engine"), g.Stage("pod-sync"))
	v.mu.Lock()
	delete(v.failing, def.Name)
	v.mu.Unlock()
	klog.FromContext(ctx).Info("Virtual node starting", "port", def.Port, "hostIPs", v.hostIPs)
	return g.Run(ctx)
}

// providerGate is ready once the provider is (a provider with loops of
// its own implements runnable.Readier), and fails the node when the
// provider's loops stop on their own.
type providerGate struct {
	prov provider.Provider
	done <-chan error
	name string
}

func (p *providerGate) Ready() <-chan struct{} {
	if rd, ok := p.prov.(runnable.Readier); ok {
		return rd.Ready()
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (p *providerGate) Start(ctx context.Context) error {
	select {
	case err := <-p.done:
		if ctx.Err() == nil {
			return fmt.Errorf("provider %s stopped: %w", p.name, err)
		}
	case <-ctx.Done():
	}
	return nil
}

// stop stops a node's loops and its provider (its pods keep running).
func (v *Set) stop(n *virtualNode) {
	n.cancel()
	<-n.done
	n.mu.Lock()
	if n.stopProvider != nil {
		n.stopProvider()
	}
	n.mu.Unlock()
	v.mu.Lock()
	if v.running[n.def.Name] == n {
		delete(v.running, n.def.Name)
	}
	delete(v.failing, n.def.Name)
	v.mu.Unlock()
}

// remove takes a node out of the cluster: its loops stop, its provider's
// pods are deleted, then its Node object (whose Lease goes with it).
func (v *Set) remove(ctx context.Context, n *virtualNode) {
	log := klog.FromContext(ctx).WithValues("virtualNode", n.def.Name)
	log.Info("Virtual node removed from the config; draining and deleting it")
	n.cancel()
	<-n.done
	n.mu.Lock()
	prov, stopProvider, clients := n.prov, n.stopProvider, n.clients
	n.mu.Unlock()
	if prov != nil {
		dctx, cancel := context.WithTimeout(ctx, drainTimeout)
		left, err := virtual.Drain(klog.NewContext(dctx, log), prov)
		cancel()
		if err != nil {
			log.Error(err, "Draining the removed virtual node did not finish; its provider may still run pods", "left", left)
		}
	}
	if stopProvider != nil {
		stopProvider()
	}
	// The Node is deleted with the file's identity: a node's own identity
	// (system:node:<name>) may not delete Nodes.
	var derr error
	if sc, err := v.clientsFor(ctx, ""); err == nil {
		derr = deleteNode(ctx, sc.clients, n.def.Name)
	} else if clients != nil {
		derr = deleteNode(ctx, clients, n.def.Name)
	}
	// A Node that could not be deleted stays recorded: the next start
	// tries again.
	if derr == nil {
		if err := v.registry().remove(n.def.Name); err != nil {
			log.Error(err, "Updating the record of registered virtual nodes")
		}
	}
	v.mu.Lock()
	if v.running[n.def.Name] == n {
		delete(v.running, n.def.Name)
	}
	delete(v.failing, n.def.Name)
	v.mu.Unlock()
}

// deleteNode deletes a virtual node's Lease and Node (UID precondition).
// It returns the Node's deletion error (nil when gone).
func deleteNode(ctx context.Context, clients *node.Clients, name string) error {
	log := klog.FromContext(ctx).WithValues("virtualNode", name)
	err := clients.Kube.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		log.V(2).Info("Deleting the removed virtual node's Lease", "err", err)
	}
	nodes := clients.Kube.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		uid := n.UID
		err = nodes.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	switch {
	case err == nil || apierrors.IsNotFound(err):
		log.Info("Deleted the removed virtual node's Node object")
		return nil
	case apierrors.IsForbidden(err):
		// The least-privileged identity (hack/virtual-nodes-rbac.yaml)
		// may not delete Nodes, as no kubelet may.
		log.Error(err, "The removed virtual node's Node object stays registered: the virtual nodes' identity may not delete Nodes "+
			"(grant it hack/virtual-nodes-rbac-shared.yaml, or delete the Node as an admin); the next start tries again")
	default:
		log.Error(err, "Deleting the removed virtual node's Node object; the next start tries again")
	}
	return err
}

// removeStale deletes Nodes this process registered earlier that the
// file no longer lists (removed while the kubelet was stopped). Which
// Nodes those are is this process's own record (registry, under the root
// dir), never a label: anyone allowed to label Nodes could set that. A
// recorded name is deleted only while its Node still carries this
// instance's label (the name may have gone to someone else since). Their
// providers' pods cannot be drained any more: the log says so.
func (v *Set) removeStale(ctx context.Context) {
	log := klog.FromContext(ctx)
	sc, err := v.clientsFor(ctx, "")
	if err != nil {
		return
	}
	reg := v.registry()
	names, err := reg.load()
	if err != nil {
		log.Error(err, "Reading the virtual nodes this process registered; stale ones stay", "file", reg.path)
		return
	}
	wanted := map[string]bool{}
	for _, n := range v.cfg.Nodes {
		wanted[n.Name] = true
	}
	for _, name := range names {
		if wanted[name] {
			continue
		}
		n, err := sc.clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			log.Error(err, "Reading a virtual node registered earlier; it stays", "virtualNode", name)
			continue
		case n.Labels[virtualnodes.LabelInstance] != v.instance():
			log.Info("A Node this process registered earlier now belongs to someone else; leaving it", "virtualNode", name)
		default:
			log.Info("Deleting a virtual node no longer in the config (its provider's pods, if any, are not drained)", "virtualNode", name)
			if deleteNode(ctx, sc.clients, name) != nil {
				continue // recorded still: the next start tries again
			}
		}
		if err := reg.remove(name); err != nil {
			log.Error(err, "Updating the record of registered virtual nodes", "file", reg.path)
		}
	}
}

// clientsFor returns the shared clients of an identity (a per-node
// kubeconfig, or "" for the file's, else --kubeconfig), building them and
// starting their service informer on first use.
func (v *Set) clientsFor(ctx context.Context, kubeconfig string) (*sharedClients, error) {
	if kubeconfig == "" {
		kubeconfig = v.cfg.Kubeconfig
	}
	if kubeconfig == "" {
		kubeconfig = v.defaultKubeconfig
	}
	v.mu.Lock()
	sc, ok := v.shared[kubeconfig]
	v.mu.Unlock()
	if ok {
		return sc, nil
	}
	clients, err := v.newClients(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("virtual nodes: %w", err)
	}
	inf := coreinformers.NewServiceInformer(clients.Kube, metav1.NamespaceAll, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	lister := corelisters.NewServiceLister(inf.GetIndexer())
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("virtual nodes: stopped before the service informer synced")
	}
	sc = &sharedClients{clients: clients, services: virtual.ListerServices{Lister: lister}}
	v.mu.Lock()
	if existing, ok := v.shared[kubeconfig]; ok {
		sc = existing
	} else {
		v.shared[kubeconfig] = sc
	}
	v.mu.Unlock()
	return sc, nil
}

// HealthCheck fails while a virtual node waits to be started again after
// a failure.
func (v *Set) HealthCheck() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.failing) == 0 {
		return nil
	}
	var names []string
	for n := range v.failing {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("virtual nodes failing: %v (last error of %s: %v)", names, names[0], v.failing[names[0]])
}

// Streams returns the stream handlers of a running virtual node (for the
// kubelet API server of that node), or nil.
func (v *Set) Streams(name string) *virtual.Streams {
	v.mu.Lock()
	n := v.running[name]
	v.mu.Unlock()
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.engine == nil {
		return nil
	}
	return n.engine.Streams()
}

// runningNodes is a snapshot of the running nodes (each node's parts are
// read under its own lock).
func (v *Set) runningNodes() []*virtualNode {
	v.mu.Lock()
	defer v.mu.Unlock()
	nodes := make([]*virtualNode, 0, len(v.running))
	for _, n := range v.running {
		nodes = append(nodes, n)
	}
	return nodes
}

// Pods are every virtual node's pods with their status (/pods on a
// process without a real node).
func (v *Set) Pods() []*v1.Pod {
	nodes := v.runningNodes()
	var out []*v1.Pod
	for _, n := range nodes {
		n.mu.Lock()
		eng := n.engine
		n.mu.Unlock()
		if eng != nil {
			out = append(out, eng.Pods()...)
		}
	}
	return out
}

// RunningPods are what the providers run (/runningpods/).
func (v *Set) RunningPods(ctx context.Context) ([]*v1.Pod, error) {
	nodes := v.runningNodes()
	var out []*v1.Pod
	for _, n := range nodes {
		n.mu.Lock()
		prov := n.prov
		n.mu.Unlock()
		if prov == nil {
			continue
		}
		pods, err := prov.ListPods(ctx)
		if err != nil {
			return nil, fmt.Errorf("virtual node %s: %w", n.def.Name, err)
		}
		out = append(out, pods...)
	}
	return out, nil
}

// stateDir is where this process keeps the virtual nodes' state: under
// --root-dir, written by this process only (never chosen by anything in
// the cluster). "" without a root dir (tests): state is then in memory.
func (v *Set) stateDir() string {
	if v.kc.RootDir == "" {
		return ""
	}
	return filepath.Join(v.kc.RootDir, "virtual-nodes")
}

// providerStateDir is a node's provider's own directory.
func (v *Set) providerStateDir(def virtualnodes.Node) string {
	if v.stateDir() == "" {
		return ""
	}
	return filepath.Join(v.stateDir(), "nodes", def.Name, def.Provider)
}

func (v *Set) registry() *registry {
	v.regOnce.Do(func() {
		v.reg = &registry{}
		if d := v.stateDir(); d != "" {
			v.reg.path = filepath.Join(d, "registered.json")
		}
	})
	return v.reg
}
