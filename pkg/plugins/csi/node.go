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
