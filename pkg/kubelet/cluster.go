package kubelet

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/gokubelet/kubelet/pkg/machineinfo"
	"github.com/gokubelet/kubelet/pkg/podmanager"
	"github.com/gokubelet/kubelet/pkg/podworkers"
	"github.com/gokubelet/kubelet/pkg/status"
)

// clusterParts are the pieces that exist only when the kubelet is joined to
// an API server. A nil *clusterParts is standalone mode.
type clusterParts struct {
	kube kubernetes.Interface
}

func (c *clusterParts) client() kubernetes.Interface {
	if c == nil {
		return nil
	}
	return c.kube
}

// connect builds the API client and the node's cluster-side controllers.
func (k *Kubelet) connect(ctx context.Context, b record.EventBroadcaster, m machineinfo.Info) (*clusterParts, error) {
	return nil, fmt.Errorf("--kubeconfig: joining a cluster is not implemented yet")
}

func (c *clusterParts) startSources(ctx context.Context, k *Kubelet, goRun func(string, func(context.Context))) {
}

func isMirror(p *v1.Pod) bool { return podmanager.IsMirrorPod(p) }

// onMirrorPodChange reacts to a mirror pod appearing, changing or going.
func (k *Kubelet) onMirrorPodChange(ctx context.Context, p *v1.Pod) {}

// housekeepingExtras is the cluster-side part of housekeeping.
func (k *Kubelet) housekeepingExtras(ctx context.Context) {}

// onPodRemoved runs once a pod left its source and nothing of it remains.
func (k *Kubelet) onPodRemoved(ctx context.Context, uid types.UID, pod *v1.Pod) {
	k.status.RemovePod(uid)
}

// admit decides whether a new pod may run here.
func (k *Kubelet) admit(ctx context.Context, p *v1.Pod) bool { return true }

// resolver is the status manager's view of the kubelet; nil standalone.
func (c *clusterParts) resolver(k *Kubelet) status.PodResolver {
	if c == nil {
		return nil
	}
	return k
}

// StatusTarget maps a pod to the API object carrying its status: the pod
// itself, or the mirror pod of a static pod.
func (k *Kubelet) StatusTarget(uid types.UID) (status.Target, bool) {
	p, ok := k.pods.Get(uid)
	if !ok {
		return status.Target{}, false
	}
	if podmanager.IsStaticPod(p) {
		m, ok := k.pods.MirrorOf(p)
		if !ok {
			return status.Target{}, false
		}
		return status.Target{Pod: m, Mirror: true}, true
	}
	return status.Target{Pod: p}, true
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
