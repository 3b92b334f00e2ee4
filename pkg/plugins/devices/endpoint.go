package devices

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// callTimeout bounds each call to a plugin (options, Allocate,
// GetPreferredAllocation, PreStartContainer): admission waits for
// Allocate, and a plugin that hangs must not hold the node's pods.
const callTimeout = 10 * time.Second

// endpoint is the kubelet's connection to one registered device plugin.
type endpoint struct {
	resource string
	socket   string
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	options  *pluginapi.DevicePluginOptions
	// cancel ends its ListAndWatch stream.
	cancel context.CancelFunc
}

// dial connects to a plugin's socket and asks its options.
func dial(ctx context.Context, resource, socket string) (*endpoint, error) {
	conn, err := grpc.NewClient("passthrough:///"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		return nil, fmt.Errorf("device plugin %s at %s: %w", resource, socket, err)
	}
	e := &endpoint{resource: resource, socket: socket, conn: conn, client: pluginapi.NewDevicePluginClient(conn)}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	opts, err := e.client.GetDevicePluginOptions(cctx, &pluginapi.Empty{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("failed to get device plugin options of %s at %s: %w", resource, socket, err)
	}
	e.options = opts
	return e, nil
}

// close ends the stream and the connection.
func (e *endpoint) close() {
	if e.cancel != nil {
		e.cancel()
	}
	_ = e.conn.Close()
}

func (e *endpoint) allocate(ctx context.Context, ids []string) (*pluginapi.AllocateResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return e.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
}

func (e *endpoint) preferred(ctx context.Context, available, mustInclude []string, size int) ([]string, error) {
	if e.options == nil || !e.options.GetPreferredAllocationAvailable {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: int32(size),
	}}})
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %w", err)
	}
	if len(resp.GetContainerResponses()) == 0 {
		return nil, nil
	}
	return resp.ContainerResponses[0].DeviceIDs, nil
}

func (e *endpoint) preStart(ctx context.Context, ids []string) error {
	if e.options == nil || !e.options.PreStartRequired {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if _, err := e.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids}); err != nil {
		return fmt.Errorf("device plugin PreStartContainer rpc failed with err: %w", err)
	}
	return nil
}
