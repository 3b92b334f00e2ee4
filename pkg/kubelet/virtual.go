package kubelet

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/engine/virtual/nodeset"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/runnable"
	"github.com/gokubelet/kubelet/pkg/server"
)

// runVirtualOnly runs a process with virtual nodes and no real node (no
// container runtime, no machine facts, no static pods): the virtual
// nodes (each with its kubelet API at its port), healthz and, when
// configured, the read-only API over their pods.
func runVirtualOnly(ctx context.Context, s *kubeletconfig.Settings) error {
	log := klog.FromContext(ctx)
	cfg := s.Config
	ips := s.NodeIPs
	if len(ips) == 0 && s.VirtualNodes.Address == "" {
		ips = defaultRouteIPs()
	}
	vn, err := nodeset.New(s, ips, Version())
	if err != nil {
		return err
	}
	vn.API = virtualNodeAPI(s)
	checks := []server.HealthCheck{{Name: "virtual-nodes", Check: vn.HealthCheck}}
	servers, err := listen(cfg.HealthzBindAddress, deref(cfg.HealthzPort), cfg.Address, cfg.ReadOnlyPort, checks, vn, nil)
	if err != nil {
		return err
	}
	var g runnable.Group
	st := g.Stage("servers")
	for _, srv := range servers {
		st.Add(srv.name, srv.r)
	}
	g.Stage("virtual-nodes").Add("virtual-nodes", vn)
	log.Info("Kubelet starting with virtual nodes only", "config", s.VirtualNodesConfigFile, "nodes", len(s.VirtualNodes.Nodes))
	err = g.Run(ctx)
	log.Info("Kubelet stopped; the virtual nodes' pods keep running")
	return err
}

// defaultRouteIPs is the machine's default-route IPv4, the virtual nodes'
// address when nothing else says.
func defaultRouteIPs() []string {
	m, err := machineinfo.Read("")
	if err != nil || m.DefaultRouteIPv4 == nil {
		return nil
	}
	return []string{m.DefaultRouteIPv4.String()}
}
