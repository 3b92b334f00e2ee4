package volume

import (
	"context"
	"fmt"
	"strconv"
)

// CSIDrivers tells which CSI drivers are registered on the node
// (pkg/plugins/csi).
type CSIDrivers interface {
	Registered(name string) bool
}

// csiInline is a pod's inline CSI volume (spec.volumes[].csi). The node
// registers CSI drivers (pkg/plugins/csi) but does not set their volumes
// up yet: the pod waits with a reason that names the driver and whether it
// is registered.
type csiInline struct{ driver string }

func (c *csiInline) kind() string      { return "csi" }
func (c *csiInline) describe() string  { return "CSI driver " + strconv.Quote(c.driver) }
func (c *csiInline) pluginDir() string { return "" } // nothing on disk yet
func (c *csiInline) readOnly() bool    { return false }
func (c *csiInline) refreshed() bool   { return false }

func (c *csiInline) setUp(_ context.Context, s *setup) (string, error) {
	return "", &UnsupportedError{Volume: s.name, Type: "csi", Detail: csiDriverState(s.m.opts.CSIDrivers, c.driver)}
}

// csiDriverState says what this node knows of a CSI driver, for a volume's
// reason.
func csiDriverState(drivers CSIDrivers, name string) string {
	if drivers == nil || !drivers.Registered(name) {
		return fmt.Sprintf("CSI driver %q is not registered on this node", name)
	}
	return fmt.Sprintf("CSI driver %q is registered, but this node does not set up CSI volumes yet", name)
}
