package csi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// VolumeCallTimeout bounds one volume call to a driver (stage, publish and
// their reverses), upstream's two minutes: a driver may format a disk.
const VolumeCallTimeout = 2 * time.Minute

// NotRegisteredError is a volume call for a driver the node does not have.
type NotRegisteredError struct{ Driver string }

func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("CSI driver %q is not registered on this node", e.Driver)
}

// NodeCaps are the driver's Node service capabilities the kubelet acts on.
type NodeCaps struct {
	// StageUnstage: the driver stages a volume once per node
	// (NodeStageVolume) before publishing it to each pod.
	StageUnstage bool
	// VolumeMountGroup: the driver applies the pod's fsGroup itself.
	VolumeMountGroup bool
	// SingleNodeMultiWriter: the driver knows the access modes
	// SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER.
	SingleNodeMultiWriter bool
	// GetVolumeStats: the driver answers NodeGetVolumeStats (the
	// volume's usage is the driver's, not statfs').
	GetVolumeStats bool
	// ExpandVolume: the driver grows a volume's filesystem on the node
	// (NodeExpandVolume) after the controller grew the volume.
	ExpandVolume bool
}

// capsFrom reads the capabilities of a NodeGetCapabilities answer.
func capsFrom(resp *csipb.NodeGetCapabilitiesResponse) NodeCaps {
	var c NodeCaps
	for _, cp := range resp.GetCapabilities() {
		switch cp.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			c.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			c.VolumeMountGroup = true
		case csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			c.SingleNodeMultiWriter = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			c.GetVolumeStats = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			c.ExpandVolume = true
		}
	}
	return c
}

// NodeClient makes a registered driver's volume calls (its CSI Node
// service). Every call is bounded by VolumeCallTimeout; a failure names
// the driver and the call.
type NodeClient struct {
	Driver  string
	node    csipb.NodeClient
	timeout time.Duration
	caps    *capsCache
}

// capsCache keeps a registration's capabilities once read (a driver
// registered again gets a new cache).
type capsCache struct {
	mu   sync.Mutex
	caps *NodeCaps
}

// NodeClient returns the volume client of a registered driver, or a
// *NotRegisteredError.
func (d *Drivers) NodeClient(name string) (*NodeClient, error) {
	drv, ok := d.Get(name)
	if !ok {
		return nil, &NotRegisteredError{Driver: name}
	}
	return drv.nodeClient(), nil
}

func (drv *Driver) nodeClient() *NodeClient {
	drv.capsOnce.Do(func() { drv.caps = &capsCache{} })
	return &NodeClient{Driver: drv.Name, node: drv.Node, timeout: VolumeCallTimeout, caps: drv.caps}
}

// NewNodeClient wraps a Node service client (for tests and tools; the
// kubelet's come from Drivers.NodeClient).
func NewNodeClient(driver string, node csipb.NodeClient, timeout time.Duration) *NodeClient {
	if timeout <= 0 {
		timeout = VolumeCallTimeout
	}
	return &NodeClient{Driver: driver, node: node, timeout: timeout, caps: &capsCache{}}
}

// CallError is a failed driver call.
type CallError struct {
	Driver, Call string
	Err          error
}

func (e *CallError) Error() string {
	if st, ok := status.FromError(e.Err); ok {
		return fmt.Sprintf("CSI driver %q: %s failed: %s (%s)", e.Driver, e.Call, st.Message(), st.Code())
	}
	return fmt.Sprintf("CSI driver %q: %s failed: %v", e.Driver, e.Call, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// Final reports whether a failed call certainly did nothing: its gRPC code
// says the driver answered and refused. A call that timed out, was
// cancelled or could not reach the driver may still be in progress or
// done (upstream's "uncertain" state): what it set up must be torn down
// as if it had succeeded.
func Final(err error) bool {
	if err == nil {
		return true
	}
	var ce *CallError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	st, ok := status.FromError(err)
	if !ok {
		// Not the driver's answer: nothing says the call did not start.
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

func (c *NodeClient) call(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := f(ctx); err != nil {
		return &CallError{Driver: c.Driver, Call: name, Err: err}
	}
	return nil
}

// Capabilities asks the driver NodeGetCapabilities once per registration.
func (c *NodeClient) Capabilities(ctx context.Context) (NodeCaps, error) {
	c.caps.mu.Lock()
	defer c.caps.mu.Unlock()
	if c.caps.caps != nil {
		return *c.caps.caps, nil
	}
	var resp *csipb.NodeGetCapabilitiesResponse
	err := c.call(ctx, "NodeGetCapabilities", func(ctx context.Context) error {
		var err error
		resp, err = c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
		return err
	})
	if err != nil {
		return NodeCaps{}, err
	}
	caps := capsFrom(resp)
	c.caps.caps = &caps
	return caps, nil
}

// StageVolume calls NodeStageVolume.
func (c *NodeClient) StageVolume(ctx context.Context, req *csipb.NodeStageVolumeRequest) error {
	return c.call(ctx, "NodeStageVolume", func(ctx context.Context) error {
		_, err := c.node.NodeStageVolume(ctx, req)
		return err
	})
}

// UnstageVolume calls NodeUnstageVolume.
func (c *NodeClient) UnstageVolume(ctx context.Context, volumeID, stagingPath string) error {
	return c.call(ctx, "NodeUnstageVolume", func(ctx context.Context) error {
		_, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath})
		return err
	})
}

// PublishVolume calls NodePublishVolume.
func (c *NodeClient) PublishVolume(ctx context.Context, req *csipb.NodePublishVolumeRequest) error {
	return c.call(ctx, "NodePublishVolume", func(ctx context.Context) error {
		_, err := c.node.NodePublishVolume(ctx, req)
		return err
	})
}

// UnpublishVolume calls NodeUnpublishVolume.
func (c *NodeClient) UnpublishVolume(ctx context.Context, volumeID, targetPath string) error {
	return c.call(ctx, "NodeUnpublishVolume", func(ctx context.Context) error {
		_, err := c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: targetPath})
		return err
	})
}

// Usage is one unit of a NodeGetVolumeStats answer: the driver's total,
// available and used bytes or inodes.
type Usage struct{ Total, Available, Used uint64 }

// VolumeUsage is a volume's usage as its driver reports it; a unit the
// driver did not report is nil.
type VolumeUsage struct {
	Bytes, Inodes *Usage
}

// usageFrom reads a NodeGetVolumeStats answer. An answer without a usage
// of bytes is an error: a volume's capacity is what the stats are for.
// Negative numbers (the CSI fields are signed) count as zero.
func usageFrom(resp *csipb.NodeGetVolumeStatsResponse) (VolumeUsage, error) {
	var out VolumeUsage
	nonNeg := func(v int64) uint64 {
		if v < 0 {
			return 0
		}
		return uint64(v)
	}
	for _, u := range resp.GetUsage() {
		if u == nil {
			continue
		}
		v := &Usage{Total: nonNeg(u.GetTotal()), Available: nonNeg(u.GetAvailable()), Used: nonNeg(u.GetUsed())}
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			out.Bytes = v
		case csipb.VolumeUsage_INODES:
			out.Inodes = v
		}
	}
	if out.Bytes == nil {
		return out, errors.New("NodeGetVolumeStats returned no usage in bytes")
	}
	return out, nil
}

// VolumeStats calls NodeGetVolumeStats for the volume published at path.
func (c *NodeClient) VolumeStats(ctx context.Context, volumeID, path string) (VolumeUsage, error) {
	var resp *csipb.NodeGetVolumeStatsResponse
	err := c.call(ctx, "NodeGetVolumeStats", func(ctx context.Context) error {
		var err error
		resp, err = c.node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: path})
		return err
	})
	if err != nil {
		return VolumeUsage{}, err
	}
	u, err := usageFrom(resp)
	if err != nil {
		return u, &CallError{Driver: c.Driver, Call: "NodeGetVolumeStats", Err: err}
	}
	return u, nil
}

// ExpandVolume calls NodeExpandVolume and returns the capacity the
// driver reports (0: it did not say).
func (c *NodeClient) ExpandVolume(ctx context.Context, req *csipb.NodeExpandVolumeRequest) (int64, error) {
	var resp *csipb.NodeExpandVolumeResponse
	err := c.call(ctx, "NodeExpandVolume", func(ctx context.Context) error {
		var err error
		resp, err = c.node.NodeExpandVolume(ctx, req)
		return err
	})
	if err != nil {
		return 0, err
	}
	return resp.GetCapacityBytes(), nil
}
