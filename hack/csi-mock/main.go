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
//	         -name io.kubernetes.storage.mock [-attach-limit N] [-topology]
//
// It prints "registered" or "registration refused: <reason>" on stdout when
// the kubelet tells it the outcome, and serves until SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
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

func main() {
	endpoint := flag.String("endpoint", "", "the driver's CSI socket")
	registration := flag.String("registration", "", "the registration socket, in the kubelet's plugins_registry")
	name := flag.String("name", service.Name, "the driver's name")
	attachLimit := flag.Int64("attach-limit", 0, "NodeGetInfo's max_volumes_per_node")
	topology := flag.Bool("topology", false, "report the mock's node topology segment")
	flag.Parse()
	if *endpoint == "" || *registration == "" {
		fmt.Fprintln(os.Stderr, "csi-mock: -endpoint and -registration are required")
		os.Exit(2)
	}
	svc := service.New(service.Config{DriverName: *name, DisableAttach: true, AttachLimit: *attachLimit, EnableTopology: *topology})
	drv := grpc.NewServer()
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
