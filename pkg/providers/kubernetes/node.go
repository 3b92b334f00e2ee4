package kubernetes

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gokubelet/kubelet/pkg/provider"
)

// summedResources are the resources a virtual node's capacity adds up.
var summedResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// NodeStatus reports the target cluster as one node: the sum of the
// allocatable of the nodes a copy can land on, Ready while the target's
// API server answers /readyz, its nodes are synced and it has such a node.
func (p *Provider) NodeStatus(ctx context.Context) (provider.NodeStatus, error) {
	st := p.cachedNodeStatus()
	// The informers keep their last state while the target is away, so
	// ask the target itself: NotReady, with the reason, until it answers.
	if err := p.targetReady(ctx); err != nil {
		st.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "TargetUnreachable",
			Message: fmt.Sprintf("the target cluster's API server is not ready: %v", err)}}
	}
	return st, nil
}

// targetReady asks the target API server's /readyz (public to every
// caller). A client without a REST client (a fake, in tests) counts as
// ready.
func (p *Provider) targetReady(ctx context.Context) error {
	rc := p.target.Discovery().RESTClient()
	if nilREST(rc) {
		return nil
	}
	return rc.Get().AbsPath("/readyz").Do(ctx).Error()
}

// cachedNodeStatus is the node status from the informers' view of the
// target.
func (p *Provider) cachedNodeStatus() provider.NodeStatus {
	p.mu.Lock()
	version := p.version
	p.mu.Unlock()
	st := provider.NodeStatus{
		Labels:   map[string]string{"gokubelet.io/provider": Type},
		NodeInfo: v1.NodeSystemInfo{OSImage: "gokubelet kubernetes provider", ContainerRuntimeVersion: Type + "://" + version},
	}
	if version == "" {
		st.NodeInfo.ContainerRuntimeVersion = Type + "://unknown"
	}
	if !p.nodeInformer.HasSynced() {
		st.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "TargetNotSynced",
			Message: "the target cluster's nodes are not known yet (is it reachable?)"}}
		return st
	}
	nodes, _ := p.nodes.List(labels.Everything()) // a lister never fails
	capacity, n, sample := Capacity(nodes)
	st.Capacity = capacity
	if sample != nil {
		st.NodeInfo.OperatingSystem = sample.Status.NodeInfo.OperatingSystem
		st.NodeInfo.Architecture = sample.Status.NodeInfo.Architecture
		st.NodeInfo.KernelVersion = sample.Status.NodeInfo.KernelVersion
	}
	if n == 0 {
		st.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "NoTargetNodes",
			Message: fmt.Sprintf("the target cluster has no Ready, schedulable node without the %s taint", taintKey)}}
	}
	return st
}

// Capacity sums the allocatable of the nodes a copy can land on: Ready,
// schedulable, without a NoSchedule/NoExecute virtual node taint (so a
// virtual node is never counted, by itself or another). It returns the
// sum, how many nodes counted and one of them.
func Capacity(nodes []*v1.Node) (v1.ResourceList, int, *v1.Node) {
	sum := v1.ResourceList{}
	for _, r := range summedResources {
		sum[r] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	count := 0
	var sample *v1.Node
	for _, n := range nodes {
		if !eligible(n) {
			continue
		}
		count++
		if sample == nil {
			sample = n
		}
		for _, r := range summedResources {
			if q, ok := n.Status.Allocatable[r]; ok {
				s := sum[r]
				s.Add(q)
				sum[r] = s
			}
		}
	}
	return sum, count, sample
}

func eligible(n *v1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == taintKey && (t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute) {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
