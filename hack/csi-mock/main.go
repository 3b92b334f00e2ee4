//go:build ignore

// csi-mock runs upstream's mock CSI driver
// (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service, the
// driver upstream's csi-mock e2e specs use; nobody here wrote it) as a node
// plugin on a unix socket, and registers it with the kubelet through the
// registration socket in the kubelet's plugins_registry, as a
// node-driver-registrar sidecar would (that registrar is not served by the
// Go module proxy). This file is test harness glue only: it is built by
// hack/build-upstream.sh csi-mock in its throw-away wrapper module (the
// ignore tag keeps it out of this repository's module).
//
//	csi-mock -endpoint /run/mock/csi.sock -registration /var/lib/kubelet/plugins_registry/mock-reg.sock \
//	         -name io.kubernetes.storage.mock [-attach-limit N] [-topology] [-log-calls] [-attach] [-node-expansion]
//
// It prints "registered" or "registration refused: <reason>" on stdout when
// the kubelet tells it the outcome, and serves until SIGTERM or SIGINT.
// With -log-calls it also prints one line per CSI Node or Controller
// service call once the driver answered it: "call <Method> <gRPC code>
// <request as JSON>", so a test sees what the kubelet (Node) and the
// controller sidecars (Controller: csi-provisioner's CreateVolume and
// DeleteVolume, csi-attacher's ControllerPublishVolume and
// ControllerUnpublishVolume) asked for and in which order. With -attach
// the mock wants the publish context an attacher would give ("device"):
// the node can only stage and publish its volumes once they are attached.
// With -node-expansion the mock advertises the node capability
// EXPAND_VOLUME and its ControllerExpandVolume answers
// node_expansion_required, so a resized volume waits for the kubelet's
// NodeExpandVolume (the mock's Config.NodeExpansionRequired). Its
// NodeGetVolumeStats (GET_VOLUME_STATS, always advertised) reports the
// volume's capacity as the total bytes, and nothing else.
//
// The Controller and Identity services are served on the same -endpoint
// as the Node service (one process plays controller and node plugin, as
// the mock does in upstream's e2e), so csi-provisioner and csi-attacher
// run with --csi-address set to it. The mock's controller publishes every
// volume with the publish context device=/dev/mock when -attach is given
// (otherwise ControllerPublishVolume is Unimplemented and
// PUBLISH_UNPUBLISH_VOLUME is not advertised), and keeps its volumes in
// memory only: they have no data.
//
// A panic in the mock's handler is answered with an Internal error (and
// printed on stderr) instead of ending the process: the v1.37.2 mock's
// NodePublishVolume dereferences a nil volume for every inline ephemeral
// request (it looks the ephemeral volume up among its persistent ones), so
// the kubelet's inline volumes meet a driver that fails them, not one that
// vanishes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	printMu.Lock()
	defer printMu.Unlock()
	if s.PluginRegistered {
		fmt.Println("registered")
	} else {
		fmt.Println("registration refused:", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func listen(path string) net.Listener {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return l
}

var printMu sync.Mutex

// recoverPanics answers a call whose handler panicked with Internal.
func recoverPanics(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "csi-mock: %s panicked: %v\n", info.FullMethod, r)
			resp, err = nil, status.Errorf(codes.Internal, "mock driver panicked in %s: %v", info.FullMethod, r)
		}
	}()
	return handler(ctx, req)
}

// logServedCalls prints each Node and Controller service call with its outcome
// (their method names do not overlap).
func logServedCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	for _, prefix := range []string{"/csi.v1.Node/", "/csi.v1.Controller/"} {
		if strings.HasPrefix(info.FullMethod, prefix) {
			body, _ := json.Marshal(req)
			printMu.Lock()
			fmt.Printf("call %s %s %s\n", strings.TrimPrefix(info.FullMethod, prefix), status.Code(err), body)
			printMu.Unlock()
		}
	}
	return resp, err
}

func main() {
	endpoint := flag.String("endpoint", "", "the driver's CSI socket")
	registration := flag.String("registration", "", "the registration socket, in the kubelet's plugins_registry")
	name := flag.String("name", service.Name, "the driver's name")
	attachLimit := flag.Int64("attach-limit", 0, "NodeGetInfo's max_volumes_per_node")
	topology := flag.Bool("topology", false, "report the mock's node topology segment")
	logCalls := flag.Bool("log-calls", false, "print a line per CSI Node and Controller service call")
	attach := flag.Bool("attach", false, "require the attacher's publish context (\"device\") to stage and publish")
	nodeExpansion := flag.Bool("node-expansion", false, "advertise EXPAND_VOLUME: a volume grown by the controller needs NodeExpandVolume")
	flag.Parse()
	if *endpoint == "" || *registration == "" {
		fmt.Fprintln(os.Stderr, "csi-mock: -endpoint and -registration are required")
		os.Exit(2)
	}
	svc := service.New(service.Config{DriverName: *name, DisableAttach: !*attach, AttachLimit: *attachLimit, EnableTopology: *topology,
		NodeExpansionRequired: *nodeExpansion})
	interceptors := []grpc.UnaryServerInterceptor{recoverPanics}
	if *logCalls {
		interceptors = append([]grpc.UnaryServerInterceptor{logServedCalls}, interceptors...)
	}
	drv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csi.RegisterIdentityServer(drv, svc)
	csi.RegisterNodeServer(drv, svc)
	csi.RegisterControllerServer(drv, svc)
	go func() { _ = drv.Serve(listen(*endpoint)) }()
	reg := grpc.NewServer()
	registerapi.RegisterRegistrationServer(reg, &registrar{name: *name, endpoint: *endpoint})
	go func() { _ = reg.Serve(listen(*registration)) }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	// A registrar removes its socket when it stops, so the kubelet
	// deregisters the driver.
	reg.Stop()
	drv.Stop()
	_ = os.Remove(*registration)
	_ = os.Remove(*endpoint)
}
