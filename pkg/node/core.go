package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/gokubelet/kubelet/pkg/node/mirrorpod"
	"github.com/gokubelet/kubelet/pkg/node/nodelease"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/node/objects"
	"github.com/gokubelet/kubelet/pkg/node/statuswriter"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podmanager"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/source/apiserver"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

// Lifecycle is what the node core asks the engine that runs the pods. Its
// methods are called from the core's loops and must not block.
type Lifecycle interface {
	// PodTerminated reports that none of the pod's containers runs or will
	// run again (until then a terminal phase is held back from the API).
	PodTerminated(uid types.UID) bool
	// CanBeDeleted reports that nothing of the deleted pod is left on the
	// node, so its API object can go.
	CanBeDeleted(pod *v1.Pod) bool
	// RunsStaticPod reports that a static pod was admitted and has not been
	// removed: it gets a mirror pod.
	RunsStaticPod(uid types.UID) bool
}

// Options configure the node core.
type Options struct {
	// Config is what the node is configured to be (name, labels, taints,
	// reservations, ports).
	Config nodestatus.Config
	// Facts gives what the node reports about itself.
	Facts nodestatus.FactsProvider
	// Clients reach the API server. Without them the core is standalone:
	// nothing is registered or written, and the API pod source and mirror
	// pods do not exist.
	Clients *Clients
	// RegisterNode creates and updates the Node object (registerNode).
	RegisterNode bool
	// LeaseDurationSeconds is nodeLeaseDurationSeconds.
	LeaseDurationSeconds int32
	// NodeStatusUpdateFrequency and NodeStatusReportFrequency pace the
	// status writes (zero: the defaults).
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	// StatusWorkers write pod statuses in parallel (default: the status
	// writer's, 4). A virtual node, whose work is mostly status writes,
	// uses more.
	StatusWorkers int
	// EventComponent names the event source (default "kubelet").
	EventComponent string
	// OnObjectChange, when set, is told when a ConfigMap or Secret a pod
	// references changes, or any ClusterTrustBundle (the volume manager
	// refreshes what uses it).
	OnObjectChange func(objects.Ref)
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Startup, when set, times the node's start (the real node's).
	Startup *nodestatus.Startup
}

// Core is one node's shared core. Build it with New, attach the engine
// with SetLifecycle, add its runnables to the group with AddTo.
type Core struct {
	name         string
	clock        clock.WithTicker
	broadcaster  record.EventBroadcaster
	recorder     record.EventRecorder
	pods         *podmanager.Manager
	status       *statuswriter.Manager
	objects      *objects.Manager
	tokens       *objects.Tokens
	trustBundles *objects.TrustBundles
	lifecycle    Lifecycle

	// localNode is the Node built from local facts at start, used for
	// admission until the API server's copy is known (as upstream does),
	// and always when standalone.
	localNode *v1.Node
	// cluster is the API side; see clusterParts and standaloneParts.
	cluster parts
}

// parts is what differs between a joined and a standalone node.
type parts interface {
	// node is the Node admission decides against.
	node() *v1.Node
	// triggerMirrors asks the mirror pod loop to reconcile now.
	triggerMirrors()
	triggerStatus()
	// runnables are the API-side loops.
	runnables() []named
	// podSources are the pod sources this side provides.
	podSources(m *podconfig.Merger) []Source
}

type named struct {
	name string
	r    runnable.Runnable
}

// Source is a pod source: its name (podconfig.Source*) and the runnable
// feeding the merger.
type Source struct {
	Name     string
	Runnable runnable.Runnable
}

// New builds the node core. It reads the facts once, to build the local
// Node used for admission before the API server's copy is known.
func New(ctx context.Context, opts Options) (*Core, error) {
	if opts.Config.NodeName == "" {
		return nil, errors.New("node: Config.NodeName is required")
	}
	if opts.Facts == nil {
		return nil, errors.New("node: Facts is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.EventComponent == "" {
		opts.EventComponent = "kubelet"
	}
	facts, err := opts.Facts.NodeFacts(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading node facts: %w", err)
	}
	c := &Core{
		name:  opts.Config.NodeName,
		clock: opts.Clock,
		pods:  podmanager.New(),
	}
	c.localNode = nodestatus.NewNode(&opts.Config, facts)
	nodestatus.SetStatus(c.localNode, &opts.Config, facts, metav1.NewTime(opts.Clock.Now()))

	// Events: logged always; sent to the API server when joined.
	c.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	c.broadcaster.StartStructuredLogging(3)
	c.recorder = c.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: opts.EventComponent, Host: c.name})

	var kube kubernetes.Interface
	if opts.Clients != nil {
		kube = opts.Clients.Kube
	}
	// Standalone (no client), every object read fails with a clear error.
	c.objects = objects.New(objects.Options{Client: kube, OnChange: opts.OnObjectChange})
	c.tokens = objects.NewTokens(kube, opts.Clock)
	c.trustBundles = objects.NewTrustBundles(kube, func(name string) {
		if opts.OnObjectChange != nil {
			opts.OnObjectChange(objects.Ref{Kind: objects.ClusterTrustBundle, Name: name})
		}
	})

	if opts.Clients == nil {
		c.status = statuswriter.NewManager(statuswriter.Options{})
		c.cluster = standaloneParts{local: c.localNode}
		return c, nil
	}
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: opts.Clients.Events.CoreV1().Events("")})
	c.status = statuswriter.NewManager(statuswriter.Options{Client: opts.Clients.Kube, Resolver: resolver{c}, Workers: opts.StatusWorkers})
	cp, err := newClusterParts(c, opts)
	if err != nil {
		return nil, err
	}
	c.cluster = cp
	return c, nil
}

// SetLifecycle attaches the engine that runs the pods. It must be called
// before the core's runnables start.
func (c *Core) SetLifecycle(l Lifecycle) { c.lifecycle = l }

// Name is the node's name.
func (c *Core) Name() string { return c.name }

// Recorder records events (logged, and sent to the API server when joined).
func (c *Core) Recorder() record.EventRecorder { return c.recorder }

// Pods is the desired pod set.
func (c *Core) Pods() *podmanager.Manager { return c.pods }

// Status is the pod status cache and writer.
func (c *Core) Status() *statuswriter.Manager { return c.status }

// Objects reads the ConfigMaps and Secrets the node's pods reference
// (through per-object watches, what the Node authorizer allows), once a
// pod is registered with it.
func (c *Core) Objects() *objects.Manager { return c.objects }

// Tokens issues and renews the pods' service account tokens.
func (c *Core) Tokens() *objects.Tokens { return c.tokens }

// TrustBundles reads ClusterTrustBundles for clusterTrustBundle
// projections.
func (c *Core) TrustBundles() *objects.TrustBundles { return c.trustBundles }

// Node is the Node admission decides against: the API server's copy once
// registered, the one built from local facts before (and standalone).
func (c *Core) Node() *v1.Node { return c.cluster.node() }

// TriggerMirrors asks for the mirror pods to be reconciled now (a static
// pod appeared, changed or went). It never blocks.
func (c *Core) TriggerMirrors() { c.cluster.triggerMirrors() }

// TriggerNodeStatus asks for the Node's status to be checked now (its
// facts changed, e.g. a device plugin's devices); triggers coalesce.
func (c *Core) TriggerNodeStatus() { c.cluster.triggerStatus() }

// OnMirrorPodChange reacts to a mirror pod appearing, changing or going:
// the mirror loop checks it, and the static pod's status is written to it
// at once.
func (c *Core) OnMirrorPodChange(mirror *v1.Pod) {
	c.TriggerMirrors()
	if static, ok := c.pods.GetByFullName(podspec.FullName(mirror)); ok {
		c.status.Sync(static.UID)
	}
}

// NodeRef is the object node-level events are recorded on.
func (c *Core) NodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: c.name, UID: types.UID(c.name)}
}

// PodSources are the pod sources the core provides, bound to the merger's
// channels: the API server's pods bound to this node when joined, none
// standalone.
func (c *Core) PodSources(m *podconfig.Merger) []Source { return c.cluster.podSources(m) }

// AddTo adds the core's loops to a stage: the status writer and, when
// joined, the Node's status, its lease and the mirror pod loop.
func (c *Core) AddTo(s *runnable.Stage) {
	if c.lifecycle == nil {
		panic("node: AddTo before SetLifecycle: the core needs the engine that runs the pods")
	}
	s.Add("status-writer", runnable.Func(c.status.Start)).
		Add("objects", runnable.Func(c.objects.Start)).
		Add("tokens", runnable.Func(c.tokens.Start)).
		Add("trust-bundles", runnable.Func(c.trustBundles.Start))
	for _, n := range c.cluster.runnables() {
		s.Add(n.name, n.r)
	}
}

// PodsWithStatus returns the desired pods with the status the kubelet
// computed (what /pods serves).
func (c *Core) PodsWithStatus() []*v1.Pod {
	pods := c.pods.List()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		cp := p.DeepCopy()
		if st, ok := c.status.GetPodStatus(p.UID); ok {
			// The kubelet's status, with the fields others own kept
			// (the claims the resource claim controller generated,
			// the scheduler's nomination).
			st.ResourceClaimStatuses = cp.Status.ResourceClaimStatuses
			st.ExtendedResourceClaimStatus = cp.Status.ExtendedResourceClaimStatus
			st.NominatedNodeName = cp.Status.NominatedNodeName
			cp.Status = st
		}
		out = append(out, cp)
	}
	return out
}

// Shutdown stops the event broadcaster; call it once the group stopped.
func (c *Core) Shutdown() { c.broadcaster.Shutdown() }

// standaloneParts: no API server.
type standaloneParts struct{ local *v1.Node }

func (s standaloneParts) node() *v1.Node                      { return s.local }
func (standaloneParts) triggerMirrors()                       {}
func (standaloneParts) triggerStatus()                        {}
func (standaloneParts) runnables() []named                    { return nil }
func (standaloneParts) podSources(*podconfig.Merger) []Source { return nil }

// clusterParts: joined to an API server.
type clusterParts struct {
	core       *Core
	clients    *Clients
	nodeStatus *nodestatus.Controller
	lease      *nodelease.Controller
	register   bool
	mirrors    *mirrorLoop
}

func newClusterParts(c *Core, opts Options) (*clusterParts, error) {
	ns, err := nodestatus.NewController(nodestatus.Options{
		Client:          opts.Clients.heartbeat(),
		Config:          opts.Config,
		Facts:           opts.Facts,
		UpdateFrequency: opts.NodeStatusUpdateFrequency,
		ReportFrequency: opts.NodeStatusReportFrequency,
		Clock:           opts.Clock,
		Startup:         opts.Startup,
	})
	if err != nil {
		return nil, err
	}
	lease, err := nodelease.NewController(nodelease.Options{
		Client:               opts.Clients.heartbeat(),
		NodeName:             c.name,
		LeaseDurationSeconds: opts.LeaseDurationSeconds,
		Node:                 ns.Node,
		Clock:                opts.Clock,
	})
	if err != nil {
		return nil, err
	}
	cp := &clusterParts{core: c, clients: opts.Clients, nodeStatus: ns, lease: lease, register: opts.RegisterNode}
	cp.mirrors = newMirrorLoop(c, mirrorpod.New(opts.Clients.Kube), ns.Node, ns.Ready())
	return cp, nil
}

func (p *clusterParts) node() *v1.Node {
	if n := p.nodeStatus.Node(); n != nil {
		return n
	}
	return p.core.localNode
}

func (p *clusterParts) triggerMirrors() { p.mirrors.trigger() }
func (p *clusterParts) triggerStatus()  { p.nodeStatus.Trigger() }

func (p *clusterParts) runnables() []named {
	var out []named
	if p.register {
		out = append(out, named{"node-status", p.nodeStatus})
	}
	return append(out, named{"node-lease", p.lease}, named{"mirror-pods", runnable.Func(p.mirrors.Start)})
}

func (p *clusterParts) podSources(m *podconfig.Merger) []Source {
	src := apiserver.New(p.clients.Kube, p.core.name, m.Channel(podspec.SourceAPI))
	return []Source{{Name: podspec.SourceAPI, Runnable: src}}
}

// resolver tells the status writer which API object carries a pod's
// status, and asks the engine about the pod's lifecycle.
type resolver struct{ c *Core }

// StatusTarget is the pod itself, or the mirror pod of a static pod.
func (r resolver) StatusTarget(uid types.UID) (statuswriter.Target, bool) {
	p, ok := r.c.pods.Get(uid)
	if !ok {
		return statuswriter.Target{}, false
	}
	if podspec.IsStatic(p) {
		// Only its own mirror: while a replaced static pod (same full name,
		// an older manifest) still stops, the mirror there is the old
		// pod's, and keeps the old pod's status until it goes.
		m, ok := r.c.pods.MirrorOf(p)
		if !ok || !mirrorpod.IsMirrorOf(m, p) {
			return statuswriter.Target{}, false
		}
		return statuswriter.Target{Pod: m, Mirror: true}, true
	}
	return statuswriter.Target{Pod: p}, true
}

func (r resolver) PodTerminated(uid types.UID) bool { return r.c.lifecycle.PodTerminated(uid) }
func (r resolver) CanBeDeleted(pod *v1.Pod) bool    { return r.c.lifecycle.CanBeDeleted(pod) }
