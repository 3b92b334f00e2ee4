package main

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventfulRuntime answers Version and ListContainers and streams one event.
type eventfulRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

func (eventfulRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "2.0"}, nil
}

func (eventfulRuntime) ListContainers(_ context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if r.GetFilter().GetId() == "missing" {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{{Id: "c1"}, {Id: "c2"}}}, nil
}

func (eventfulRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, s runtimeapi.RuntimeService_GetContainerEventsServer) error {
	return s.Send(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT})
}

func serveFake(t *testing.T, socket string) {
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, eventfulRuntime{})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

func dialCRI(t *testing.T, endpoint string) runtimeapi.RuntimeServiceClient {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

func TestNoEventsProxyPassesCallsAndRefusesTheEventStream(t *testing.T) {
	dir := t.TempDir()
	backend := filepath.Join(dir, "runtime.sock")
	serveFake(t, backend)
	p, err := startNoEventsProxy(filepath.Join(dir, "proxy.sock"), "unix://"+backend)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The backend streams events when asked directly.
	direct, err := dialCRI(t, "unix://"+backend).GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := direct.Recv(); err != nil || e.GetContainerId() != "c1" {
		t.Fatalf("direct event stream: %v, %v", e, err)
	}

	rt := dialCRI(t, p.Endpoint)
	v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil || v.GetRuntimeName() != "fake" || v.GetRuntimeVersion() != "2.0" {
		t.Fatalf("Version through the proxy: %v, %v", v, err)
	}
	l, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(l.GetContainers()) != 2 || l.GetContainers()[1].GetId() != "c2" {
		t.Fatalf("ListContainers through the proxy: %v, %v", l, err)
	}
	// The runtime's errors reach the client with their codes.
	_, err = rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: "missing"}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("an error through the proxy: %v, want NotFound", err)
	}
	// The event stream is refused as by a runtime that has none.
	s, err := rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetContainerEvents through the proxy: %v, want Unimplemented", err)
	}
}
