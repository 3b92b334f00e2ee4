// Package csitest is an in-process fake CSI driver for unit tests: a Node
// service on a unix socket that records every call, answers with the
// capabilities and errors a test sets, and creates and removes publish
// target directories as a driver that mounts would.
package csitest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Call is one call the driver received.
type Call struct {
	Method string
	// Req is the request (a copy).
	Req proto.Message
}

// Driver is the fake driver.
type Driver struct {
	csipb.UnimplementedNodeServer
	csipb.UnimplementedIdentityServer

	Name     string
	Endpoint string

	mu    sync.Mutex
	caps  []csipb.NodeServiceCapability_RPC_Type
	fail  map[string]error
	calls []Call
	// usage is what NodeGetVolumeStats answers.
	usage []*csipb.VolumeUsage
}

// Start serves a fake driver named name on a socket in a temporary
// directory until the test ends.
func Start(t testing.TB, name string) *Driver {
	t.Helper()
	dir, err := os.MkdirTemp("", "csitest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Driver{Name: name, Endpoint: filepath.Join(dir, "csi.sock"), fail: map[string]error{}}
	l, err := net.Listen("unix", d.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csipb.RegisterNodeServer(srv, d)
	csipb.RegisterIdentityServer(srv, d)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return d
}

// SetCapabilities sets what NodeGetCapabilities answers.
func (d *Driver) SetCapabilities(caps ...csipb.NodeServiceCapability_RPC_Type) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.caps = caps
}

// Fail makes every later call of method fail with err (nil: succeed again).
func (d *Driver) Fail(method string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fail[method] = err
}

// Calls returns the calls received so far.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Methods returns the names of the calls received so far, in order.
func (d *Driver) Methods() []string {
	var out []string
	for _, c := range d.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// Last returns the last call of method, or nil.
func (d *Driver) Last(method string) proto.Message {
	calls := d.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == method {
			return calls[i].Req
		}
	}
	return nil
}

func (d *Driver) record(method string, req proto.Message) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, Call{Method: method, Req: proto.Clone(req)})
	return d.fail[method]
}

func (d *Driver) NodeGetInfo(_ context.Context, req *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	if err := d.record("NodeGetInfo", req); err != nil {
		return nil, err
	}
	return &csipb.NodeGetInfoResponse{NodeId: d.Name + "-node"}, nil
}

func (d *Driver) NodeGetCapabilities(_ context.Context, req *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	if err := d.record("NodeGetCapabilities", req); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &csipb.NodeGetCapabilitiesResponse{}
	for _, c := range d.caps {
		resp.Capabilities = append(resp.Capabilities, &csipb.NodeServiceCapability{
			Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: c}},
		})
	}
	return resp, nil
}

func (d *Driver) NodeStageVolume(_ context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	if err := d.record("NodeStageVolume", req); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetStagingTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging path and capability are required")
	}
	if st, err := os.Stat(req.GetStagingTargetPath()); err != nil || !st.IsDir() {
		return nil, status.Errorf(codes.FailedPrecondition, "staging path %s is not a directory", req.GetStagingTargetPath())
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

func (d *Driver) NodeUnstageVolume(_ context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	if err := d.record("NodeUnstageVolume", req); err != nil {
		return nil, err
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume creates the target directory (its parent must exist),
// as a driver that mounts there would.
func (d *Driver) NodePublishVolume(_ context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	if err := d.record("NodePublishVolume", req); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, target path and capability are required")
	}
	if err := os.Mkdir(req.GetTargetPath(), 0o750); err != nil && !os.IsExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume removes the target directory.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	if err := d.record("NodeUnpublishVolume", req); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(req.GetTargetPath()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// SetUsage sets what NodeGetVolumeStats answers.
func (d *Driver) SetUsage(usage ...*csipb.VolumeUsage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.usage = usage
}

// NodeGetVolumeStats answers the usage SetUsage set.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	if err := d.record("NodeGetVolumeStats", req); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and path are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return &csipb.NodeGetVolumeStatsResponse{Usage: d.usage}, nil
}

// NodeExpandVolume answers the required bytes as the new capacity.
func (d *Driver) NodeExpandVolume(_ context.Context, req *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	if err := d.record("NodeExpandVolume", req); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and path are required")
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

func (d *Driver) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: d.Name, VendorVersion: "0"}, nil
}
