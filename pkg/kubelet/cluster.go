package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/mirrorpod"
	"github.com/gokubelet/kubelet/pkg/node/nodelease"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/node/statuswriter"
	"github.com/gokubelet/kubelet/pkg/pod/admission"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/pod/source/apiserver"
)

// Version is the version the kubelet reports in the Node's nodeInfo: the
// upstream kubelet version whose behaviour it implements, with this
// project's name as build metadata.
var Version = "v1.34.4+gokubelet"

// mirrorResync is how often mirror pods are reconciled without a trigger.
const mirrorResync = 10 * time.Second

// clusterParts are the pieces that exist only when the kubelet is joined to
// an API server. A nil *clusterParts is standalone mode.
type clusterParts struct {
	kube       kubernetes.Interface
	nodeStatus *nodestatus.Controller
	lease      *nodelease.Controller
	mirrors    *mirrorpod.Manager
	// mirrorTrigger (capacity 1) asks the mirror loop to reconcile now.
	mirrorTrigger chan struct{}

	// localNode is the Node built from local facts, used for admission
	// until the API server's copy is known (as upstream does).
	localNode *v1.Node

	// admitted are the pods admission let in, by UID; rejected ones are
	// remembered so they are not re-admitted on every update.
	mu       sync.Mutex
	admitted map[types.UID]bool
}

// admittedDecision returns the admission decision for a pod, if made.
func (c *clusterParts) admittedDecision(uid types.UID) (bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.admitted[uid]
	return d, ok
}

// node is the Node admission decides against: the API server's copy once
// registered, the locally built one before.
func (c *clusterParts) node() *v1.Node {
	if n := c.nodeStatus.Node(); n != nil {
		return n
	}
	return c.localNode
}

func (c *clusterParts) client() kubernetes.Interface {
	if c == nil {
		return nil
	}
	return c.kube
}

// resolver is the status manager's view of the kubelet; nil standalone.
func (c *clusterParts) resolver(k *Kubelet) statuswriter.PodResolver {
	if c == nil {
		return nil
	}
	return k
}

// connect builds the API clients and the node's cluster-side controllers.
func (k *Kubelet) connect(ctx context.Context, b record.EventBroadcaster, m machineinfo.Info) (*clusterParts, error) {
	s, cfg := k.settings, k.cfg
	rc, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", s.KubeconfigPath, err)
	}
	rc.UserAgent = "kubelet/" + Version + " (" + s.NodeName + ")"
	if cfg.ContentType != "" {
		rc.ContentType = cfg.ContentType
	}
	rc.QPS = float32(deref(cfg.KubeAPIQPS))
	rc.Burst = int(cfg.KubeAPIBurst)
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	// Events have their own rate limits, as upstream.
	ec := *rc
	ec.QPS = float32(deref(cfg.EventRecordQPS))
	ec.Burst = int(cfg.EventBurst)
	events, err := kubernetes.NewForConfig(&ec)
	if err != nil {
		return nil, fmt.Errorf("API client for events: %w", err)
	}
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.CoreV1().Events("")})

	hostname, _ := os.Hostname()
	ncfg, err := nodestatus.ConfigFrom(cfg, s.NodeName, strings.ToLower(hostname), s.NodeIPs, s.NodeLabels, Version)
	if err != nil {
		return nil, err
	}
	c := &clusterParts{kube: kube, mirrors: mirrorpod.New(kube), mirrorTrigger: make(chan struct{}, 1), admitted: map[types.UID]bool{}}
	c.localNode = nodestatus.NewNode(&ncfg, m)
	nodestatus.SetStatus(c.localNode, &ncfg, nodestatus.Inputs{Machine: m}, metav1.Now())
	c.nodeStatus, err = nodestatus.NewController(nodestatus.Options{
		Client:          kube,
		Config:          ncfg,
		Machine:         func() (machineinfo.Info, error) { return machineinfo.Read(s.RootDir) },
		RuntimeVersion:  k.runtimeVersion,
		Readiness:       k.readiness,
		UpdateFrequency: cfg.NodeStatusUpdateFrequency.Duration,
		ReportFrequency: cfg.NodeStatusReportFrequency.Duration,
	})
	if err != nil {
		return nil, err
	}
	c.lease, err = nodelease.NewController(nodelease.Options{Client: kube, NodeName: s.NodeName, LeaseDurationSeconds: cfg.NodeLeaseDurationSeconds, Node: c.nodeStatus.Node})
	if err != nil {
		return nil, err
	}
	k.cluster = c
	return c, nil
}

// startSources starts what runs against the API server: node status, the
// lease, the pod source and the mirror pod loop.
func (c *clusterParts) startSources(ctx context.Context, k *Kubelet, goRun func(string, func(context.Context))) {
	if k.cfg.RegisterNode == nil || *k.cfg.RegisterNode {
		goRun("node-status", func(ctx context.Context) { logStop(ctx, c.nodeStatus.Start(ctx)) })
	}
	goRun("node-lease", func(ctx context.Context) { logStop(ctx, c.lease.Start(ctx)) })
	src := apiserver.New(c.kube, k.nodeName, k.merger.Channel(podspec.SourceAPI))
	goRun("api-source", func(ctx context.Context) { logStop(ctx, src.Run(ctx)) })
	goRun("mirror-pods", k.mirrorLoop)
}

func logStop(ctx context.Context, err error) {
	if err != nil {
		klog.FromContext(ctx).Error(err, "Stopped with an error")
	}
}

// runtimeVersion is the Node's containerRuntimeVersion.
func (k *Kubelet) runtimeVersion() string {
	if k.runtime == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := k.runtime.Version(ctx)
	if err != nil {
		return ""
	}
	return k.runtime.Type() + "://" + v
}

// readiness feeds the Node's Ready condition: the runtime and its network
// as CRI reports them, and the kubelet's own loops.
func (k *Kubelet) readiness() nodestatus.Readiness {
	r := nodestatus.Readiness{RuntimeReady: true, NetworkReady: true}
	if k.runtime == nil {
		return nodestatus.Readiness{Errors: []string{"container runtime not connected"}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if cs, ok := k.runtime.(interface {
		RuntimeConditions(ctx context.Context) ([]*runtimeapi.RuntimeCondition, error)
	}); ok {
		conds, err := cs.RuntimeConditions(ctx)
		if err != nil {
			r.RuntimeReady = false
			r.Errors = append(r.Errors, fmt.Sprintf("container runtime status check failed: %v", err))
		}
		for _, c := range conds {
			if c.Status {
				continue
			}
			switch c.Type {
			case runtimeapi.RuntimeReady:
				r.RuntimeReady = false
				r.Errors = append(r.Errors, fmt.Sprintf("container runtime is down: %s: %s", c.Reason, c.Message))
			case runtimeapi.NetworkReady:
				r.NetworkReady = false
				r.Errors = append(r.Errors, fmt.Sprintf("container runtime network not ready: %s: %s", c.Reason, c.Message))
			}
		}
	}
	if err := k.pleg.Healthy(); err != nil {
		r.Errors = append(r.Errors, "PLEG is not healthy: "+err.Error())
	}
	return r
}

// onMirrorPodChange reacts to a mirror pod appearing, changing or going:
// the mirror loop checks it, and the static pod's status is written to it
// at once.
func (k *Kubelet) onMirrorPodChange(ctx context.Context, mirror *v1.Pod) {
	k.triggerMirrors()
	if static, ok := k.pods.GetByFullName(podspec.FullName(mirror)); ok {
		k.status.Sync(static.UID)
	}
}

func (k *Kubelet) triggerMirrors() {
	if k.cluster == nil {
		return
	}
	select {
	case k.cluster.mirrorTrigger <- struct{}{}:
	default:
	}
}

// mirrorLoop keeps one mirror pod per running static pod in the API
// server, and none for static pods that are gone. API calls happen here,
// never in the sync loop.
func (k *Kubelet) mirrorLoop(ctx context.Context) {
	t := k.clock.NewTicker(mirrorResync)
	defer t.Stop()
	for {
		k.reconcileMirrors(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-k.cluster.mirrorTrigger:
		}
	}
}

func (k *Kubelet) reconcileMirrors(ctx context.Context) {
	log := klog.FromContext(ctx)
	c := k.cluster
	node := c.nodeStatus.Node()
	wanted := map[string]bool{}
	for _, p := range k.pods.List() {
		if !podspec.IsStatic(p) {
			continue
		}
		if info, ok := k.workers.Get(p.UID); ok && info.Removed {
			continue
		}
		if decided, ok := k.cluster.admittedDecision(p.UID); ok && !decided {
			continue
		}
		wanted[podspec.FullName(p)] = true
		mirror, _ := k.pods.MirrorOf(p)
		create, del := mirrorpod.Needs(p, mirror)
		if del {
			uid := mirror.UID
			if _, err := c.mirrors.DeleteMirror(ctx, podspec.FullName(mirror), &uid); err != nil {
				log.Error(err, "Deleting an outdated mirror pod", "pod", klog.KObj(mirror))
				continue
			}
		}
		if create && node != nil {
			if err := c.mirrors.CreateMirror(ctx, p, node); err != nil && !errors.Is(err, mirrorpod.ErrNodeDeleting) {
				log.Error(err, "Creating mirror pod", "pod", klog.KObj(p))
				k.recorder.Eventf(p, v1.EventTypeWarning, "FailedCreateMirrorPod", "creating mirror pod: %v", err)
			}
		}
	}
	for _, m := range k.pods.Mirrors() {
		if wanted[podspec.FullName(m)] || m.DeletionTimestamp != nil {
			continue
		}
		uid := m.UID
		if _, err := c.mirrors.DeleteMirror(ctx, podspec.FullName(m), &uid); err != nil {
			log.Error(err, "Deleting an orphaned mirror pod", "pod", klog.KObj(m))
		}
	}
}

// housekeepingExtras drops cached statuses of pods no source has any more.
func (k *Kubelet) housekeepingExtras(ctx context.Context) {
	k.status.RemoveOrphans(k.pods.Has)
	if k.cluster != nil {
		k.cluster.mu.Lock()
		for uid := range k.cluster.admitted {
			if !k.pods.Has(uid) {
				delete(k.cluster.admitted, uid)
			}
		}
		k.cluster.mu.Unlock()
	}
}

// onPodRemoved runs once a pod left its source (or was deleted) and nothing
// of it remains in the runtime.
func (k *Kubelet) onPodRemoved(ctx context.Context, uid types.UID, pod *v1.Pod) {
	if pod != nil && podspec.IsStatic(pod) {
		k.status.RemovePod(uid)
		k.triggerMirrors()
		return
	}
	// An API pod: its terminal status must reach the API server before the
	// final delete, so the status entry stays until the pod leaves the
	// source; ask for the delete check now.
	k.status.Sync(uid)
}

// admit decides, once per pod, whether a new pod may run here, as upstream
// admission does. A rejected pod ends Failed with the reason and an event.
func (k *Kubelet) admit(ctx context.Context, p *v1.Pod) bool {
	c := k.cluster
	if c == nil {
		return k.admitStandalone(ctx, p)
	}
	c.mu.Lock()
	decided, ok := c.admitted[p.UID]
	c.mu.Unlock()
	if ok {
		return decided
	}
	if _, running := k.workers.Get(p.UID); running {
		// Already running (e.g. adopted after a restart): keep it.
		c.mu.Lock()
		c.admitted[p.UID] = true
		c.mu.Unlock()
		return true
	}
	if st, ok := k.status.GetPodStatus(p.UID); ok && podstatus.IsTerminal(st.Phase) {
		return false
	}
	if podstatus.IsTerminal(p.Status.Phase) {
		return false
	}
	res := k.admitPodSpec(p, c.node())
	if res.Admit {
		res = admission.Admit(p, c.node(), k.activePods(p.UID))
	}
	c.mu.Lock()
	c.admitted[p.UID] = res.Admit
	c.mu.Unlock()
	if res.Admit {
		return true
	}
	klog.FromContext(ctx).Info("Pod rejected by admission", "pod", klog.KObj(p), "reason", res.Reason, "message", res.Message)
	k.recorder.Event(p, v1.EventTypeWarning, res.Reason, res.Message)
	st := k.computeStatus(p, nil, podstatus.Options{FailReason: res.Reason, FailMessage: res.Message})
	k.status.SetPodStatus(p, st)
	return false
}

// activePods are the admitted pods that still run or may run.
func (k *Kubelet) activePods(except types.UID) []*v1.Pod {
	c := k.cluster
	var out []*v1.Pod
	for _, p := range k.pods.List() {
		if p.UID == except {
			continue
		}
		c.mu.Lock()
		ok := c.admitted[p.UID]
		c.mu.Unlock()
		if !ok {
			continue
		}
		if info, ok := k.workers.Get(p.UID); ok && info.State == podworkers.Terminated {
			continue
		}
		if st, ok := k.status.GetPodStatus(p.UID); ok && podstatus.IsTerminal(st.Phase) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// sortByCreation orders pods as upstream admits them: oldest first.
func sortByCreation(pods []*v1.Pod) []*v1.Pod {
	out := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}

// StatusTarget maps a pod to the API object carrying its status: the pod
// itself, or the mirror pod of a static pod.
func (k *Kubelet) StatusTarget(uid types.UID) (statuswriter.Target, bool) {
	p, ok := k.pods.Get(uid)
	if !ok {
		return statuswriter.Target{}, false
	}
	if podspec.IsStatic(p) {
		m, ok := k.pods.MirrorOf(p)
		if !ok {
			return statuswriter.Target{}, false
		}
		return statuswriter.Target{Pod: m, Mirror: true}, true
	}
	return statuswriter.Target{Pod: p}, true
}

// PodTerminated reports that none of the pod's containers runs or will run
// again.
func (k *Kubelet) PodTerminated(uid types.UID) bool {
	info, ok := k.workers.Get(uid)
	return !ok || info.State == podworkers.Terminated
}

// CanBeDeleted reports that a deleted pod has nothing left on the node, so
// its API object can go.
func (k *Kubelet) CanBeDeleted(pod *v1.Pod) bool {
	info, ok := k.workers.Get(pod.UID)
	return !ok || (info.State == podworkers.Terminated && info.Removed)
}
