package kubelet

import (
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/pod/timeline"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/instrumented"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
	"github.com/gokubelet/kubelet/pkg/server/monitoring"
	"github.com/gokubelet/kubelet/pkg/stats"
)

// observability is the kubelet's monitoring: the pod startup timeline,
// the stats provider, the metrics registries and the routes serving them.
// It hooks into the kubelet through decorators (CRI clients, pod worker
// handler, status manager) and two one-line calls (pod updates in the sync
// loop, sync results in SyncPod). A nil *observability does nothing.
type observability struct {
	timeline *timeline.Tracker
	stats    *stats.Provider
	routes   []monitoring.Route
}

func newObservability() *observability {
	return &observability{timeline: timeline.New(nil)}
}

// criObserver is what kuberuntime reports pod start CRI calls to.
func (o *observability) criObserver() instrumented.Observer {
	if o == nil {
		return nil
	}
	return o.timeline
}

// start builds the stats provider, the registries and the routes, once
// the runtime and the PLEG exist. Nothing is collected until asked.
func (o *observability) start(k *Kubelet, rt *kuberuntime.Manager, m machineinfo.Info) {
	cfg := k.cfg
	o.stats = stats.New(stats.Options{
		NodeName:   k.nodeName,
		RootDir:    k.settings.RootDir,
		PodLogsDir: cfg.PodLogsDir,
		Runtime:    rt.RuntimeService(),
		Images:     rt.ImageService(),
		Pods:       k.pleg.Pods,
		PodCgroup: func(uid types.UID) (string, bool) {
			p, ok := k.pods.Get(uid)
			if !ok {
				return "", false
			}
			return kuberuntime.CgroupParent(p, cfg.CgroupDriver, cfg.CgroupRoot), true
		},
		VolumePeriod:   cfg.VolumeStatsAggPeriod.Duration,
		CgroupDriver:   cfg.CgroupDriver,
		CgroupRoot:     cfg.CgroupRoot,
		MemoryCapacity: uint64(m.MemoryCapacityBytes),
		NumCPU:         m.NumCPU,
		BootID:         m.BootID,
		MachineID:      m.MachineID,
		SystemUUID:     m.SystemUUID,
	})
	o.routes = monitoring.Routes(monitoring.Options{
		Summary:  o.stats,
		Timeline: o.timeline,
		Kubelet: metrics.NewKubeletRegistry(metrics.KubeletOptions{
			NodeName: k.nodeName, CgroupVersion: o.stats.CgroupVersion(), Running: k.pleg.Pods, Pods: k.podCounts,
		}),
		Probes:   metrics.NewProbesRegistry(),
		Resource: stats.NewResourceRegistry(o.stats),
		Cadvisor: stats.NewCadvisorRegistry(o.stats),
	})
	for _, r := range o.routes {
		klog.V(2).InfoS("Monitoring endpoint ready", "path", r.Path, "subtree", r.Prefix, "subresource", r.Subresource)
	}
}

// podCounts counts the desired, active and mirror pods (at scrape time).
func (k *Kubelet) podCounts() metrics.PodCounts {
	var n metrics.PodCounts
	idx := func(p *v1.Pod) int {
		if podspec.IsStatic(p) {
			return 1
		}
		return 0
	}
	var active []*v1.Pod
	if k.cluster != nil {
		active = k.activePods("")
	}
	for _, p := range k.pods.List() {
		n.Desired[idx(p)]++
		if k.cluster == nil && k.isActive(p) {
			active = append(active, p)
		}
	}
	for _, p := range active {
		n.Active[idx(p)]++
	}
	n.Mirror = len(k.pods.Mirrors())
	return n
}

// isActive is activePods' rule for a standalone kubelet, which admits every
// pod: not finished.
func (k *Kubelet) isActive(p *v1.Pod) bool {
	if info, ok := k.workers.Get(p.UID); ok && info.State == podworkers.Terminated {
		return false
	}
	if st, ok := k.status.GetPodStatus(p.UID); ok && podstatus.IsTerminal(st.Phase) {
		return false
	}
	return true
}

// Routes are the monitoring endpoints, with the authorization subresource
// each needs, for the secured server to mount.
func (k *Kubelet) Routes() []monitoring.Route {
	if k.obs == nil {
		return nil
	}
	return k.obs.routes
}

// readOnly serves the monitoring routes in front of the read-only API, as
// upstream's read-only port does.
func (o *observability) readOnly(base http.Handler) http.Handler {
	if o == nil || len(o.routes) == 0 {
		return base
	}
	return monitoring.WithRoutes(base, o.routes)
}

// wrapHandler times pod worker steps and marks each pod's first sync.
func (o *observability) wrapHandler(h podworkers.Handler) podworkers.Handler {
	if o == nil {
		return h
	}
	return o.timeline.InstrumentHandler(h)
}

// wrapStatus shows the timeline every status the kubelet computes.
func (o *observability) wrapStatus(sm StatusManager) StatusManager {
	if o == nil {
		return sm
	}
	return observedStatus{StatusManager: sm, t: o.timeline}
}

type observedStatus struct {
	StatusManager
	t *timeline.Tracker
}

func (s observedStatus) SetPodStatus(pod *v1.Pod, st v1.PodStatus) {
	s.StatusManager.SetPodStatus(pod, st)
	s.t.StatusComputed(pod, st)
}

func (s observedStatus) RemoveOrphans(keep func(types.UID) bool) {
	s.StatusManager.RemoveOrphans(keep)
	s.t.Prune(keep)
}

// podUpdate shows the timeline a config change (called from the sync
// loop): new pods start their timeline, API pods' watched status ends it.
func (o *observability) podUpdate(u podconfig.PodUpdate) {
	if o == nil {
		return
	}
	if u.Op == podconfig.REMOVE {
		for _, p := range u.Pods {
			o.timeline.Forget(p.UID)
		}
		return
	}
	o.timeline.ObservePods(u.Pods)
}

// syncResult counts the sandbox and container starts of one SyncPod round
// (kubelet_started_pods_total, kubelet_started_containers_total and their
// errors). A restart deferred by crash-loop back-off tried nothing and is
// not counted, as upstream.
func (o *observability) syncResult(pod *v1.Pod, res container.SyncResult) {
	if o == nil {
		return
	}
	for _, s := range res.Steps {
		switch s.Action {
		case container.ActionCreateSandbox:
			metrics.StartedPodsTotal.Inc()
			if s.Err != nil {
				metrics.StartedPodsErrorsTotal.Inc()
			}
		case container.ActionStart, container.ActionStartInit, container.ActionPull:
			if s.Reason == kuberuntime.ReasonCrashLoopBackOff {
				continue
			}
			typ := containerType(pod, s.Container)
			metrics.StartedContainersTotal.WithLabelValues(typ).Inc()
			if s.Err != nil {
				code := s.Reason
				if code == "" {
					code = "Unknown"
				}
				metrics.StartedContainersErrorsTotal.WithLabelValues(typ, code).Inc()
			}
		}
	}
}

// containerType is the container_type label of a container of pod.
func containerType(pod *v1.Pod, name string) string {
	_, kind, _ := podspec.FindContainer(pod, name)
	switch kind {
	case podspec.Init:
		return metrics.InitContainer
	case podspec.Ephemeral:
		return metrics.EphemeralContainer
	}
	return metrics.Container
}
