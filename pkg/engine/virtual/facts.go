package virtual

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// factsTimeout bounds a provider's NodeStatus call.
const factsTimeout = 5 * time.Second

// Facts is a virtual node's nodestatus.FactsProvider: what its provider
// reports (provider.NodeStatus), with the node's own addresses first
// (where its kubelet API listens), its capacity overrides, and the default
// labels.
type Facts struct {
	Provider provider.Provider
	// ProviderType names the provider in the runtime version when it
	// gives none ("<type>://unknown").
	ProviderType string
	// NodeName is the hostname label and the Hostname address.
	NodeName string
	// HostIPs are the node's InternalIPs.
	HostIPs []string
	// Capacity overrides the provider's capacity (and allocatable) for the
	// resources it names.
	Capacity v1.ResourceList

	mu   sync.Mutex
	last *provider.NodeStatus
}

// NodeFacts asks the provider and maps its answer.
func (f *Facts) NodeFacts(ctx context.Context) (nodestatus.Facts, error) {
	ctx, cancel := context.WithTimeout(ctx, factsTimeout)
	defer cancel()
	ns, err := f.Provider.NodeStatus(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("provider %s: node status: %w", f.ProviderType, err)
		if f.last == nil {
			return nodestatus.Facts{}, err
		}
		// The last facts (mapped afresh), but NotReady with the error: a
		// provider that cannot say how its backend is must not look Ready.
		return notReady(MapNodeStatus(*f.last, f.ProviderType, f.NodeName, f.HostIPs, f.Capacity), err), nil
	}
	f.last = &ns
	return MapNodeStatus(ns, f.ProviderType, f.NodeName, f.HostIPs, f.Capacity), nil
}

// notReady is facts with err added to the reasons the node is not ready.
func notReady(facts nodestatus.Facts, err error) nodestatus.Facts {
	facts.Readiness.Errors = append(append([]string(nil), facts.Readiness.Errors...), err.Error())
	return facts
}

// MapNodeStatus turns a provider's node status into node facts (pure).
func MapNodeStatus(ns provider.NodeStatus, providerType, nodeName string, hostIPs []string, overrides v1.ResourceList) nodestatus.Facts {
	capacity := ns.Capacity.DeepCopy()
	if capacity == nil {
		capacity = v1.ResourceList{}
	}
	var allocatable v1.ResourceList
	if ns.Allocatable != nil {
		allocatable = ns.Allocatable.DeepCopy()
	} else {
		allocatable = capacity.DeepCopy()
	}
	for name, q := range overrides {
		capacity[name] = q.DeepCopy()
		allocatable[name] = q.DeepCopy()
	}
	info := ns.NodeInfo
	if info.OperatingSystem == "" {
		info.OperatingSystem = "linux"
	}
	if info.Architecture == "" {
		info.Architecture = "amd64"
	}
	if info.ContainerRuntimeVersion == "" {
		info.ContainerRuntimeVersion = providerType + "://unknown"
	}
	var addrs []v1.NodeAddress
	seen := map[v1.NodeAddress]bool{}
	add := func(a v1.NodeAddress) {
		if a.Address != "" && !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, ip := range hostIPs {
		add(v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	add(v1.NodeAddress{Type: v1.NodeHostName, Address: nodeName})
	for _, a := range ns.Addresses {
		add(a)
	}
	labels := nodestatus.DefaultLabels(nodeName, info.OperatingSystem, info.Architecture)
	for k, v := range ns.Labels {
		if _, own := labels[k]; !own {
			labels[k] = v
		}
	}
	f := nodestatus.Facts{
		Capacity:    capacity,
		Allocatable: allocatable,
		Addresses:   addrs,
		NodeInfo:    info,
		Labels:      labels,
		Readiness:   nodestatus.Readiness{RuntimeReady: true, NetworkReady: true},
	}
	for _, c := range ns.Conditions {
		switch c.Type {
		case v1.NodeReady:
			if c.Status != v1.ConditionTrue {
				msg := c.Message
				if msg == "" {
					msg = fmt.Sprintf("provider %s is not ready (%s)", providerType, c.Reason)
				}
				f.Readiness = nodestatus.Readiness{Errors: []string{msg}}
			}
		case v1.NodeMemoryPressure:
			f.Pressure.Memory = c.Status == v1.ConditionTrue
		case v1.NodeDiskPressure:
			f.Pressure.Disk = c.Status == v1.ConditionTrue
		case v1.NodePIDPressure:
			f.Pressure.PID = c.Status == v1.ConditionTrue
		default:
			f.Conditions = append(f.Conditions, c)
		}
	}
	return f
}
