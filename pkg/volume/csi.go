package volume

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"

	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
)

// CSIDrivers are the node's registered CSI drivers (pkg/plugins/csi).
type CSIDrivers = volcsi.Drivers

// csiInline is a pod's inline CSI volume (spec.volumes[].csi), published
// to the pod by its driver (pkg/volume/csi). A driver the node does not
// have keeps the pod waiting with a reason that names it.
type csiInline struct {
	vol *v1.Volume
	// republish: the driver asks for NodePublishVolume again
	// periodically (its CSIDriver's requiresRepublish).
	republish bool
}

func (c *csiInline) kind() string      { return "csi" }
func (c *csiInline) describe() string  { return "CSI driver " + strconv.Quote(c.vol.CSI.Driver) }
func (c *csiInline) pluginDir() string { return "" } // pkg/volume/csi places it
func (c *csiInline) readOnly() bool    { return c.vol.CSI.ReadOnly != nil && *c.vol.CSI.ReadOnly }
func (c *csiInline) refreshed() bool   { return c.republish }

func (c *csiInline) setUp(ctx context.Context, s *setup) (string, error) {
	if !csiRegistered(s.m.opts.CSIDrivers, c.vol.CSI.Driver) {
		return "", &UnsupportedError{Volume: s.name, Type: "csi", Detail: csiNotRegistered(c.vol.CSI.Driver)}
	}
	res, err := s.m.csi.SetUp(ctx, volcsi.Inline(s.pod, c.vol), s.csiOptions())
	c.republish = res.Republish
	return res.Path, err
}

func (s *setup) csiOptions() volcsi.SetUpOptions {
	return volcsi.SetUpOptions{First: s.first, FSGroup: s.fsGroup, FSGroupPolicy: s.fsGroupPolicy}
}

func csiRegistered(drivers CSIDrivers, name string) bool {
	return drivers != nil && drivers.Registered(name)
}

// csiNotRegistered is the reason of a volume whose driver the node does
// not have.
func csiNotRegistered(name string) string {
	return fmt.Sprintf("CSI driver %q is not registered on this node", name)
}
