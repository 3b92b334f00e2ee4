package kubelet

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
)

func TestHostIPs(t *testing.T) {
	m := machineinfo.Info{DefaultRouteIPv4: net.ParseIP("192.168.1.5")}
	if got := hostIPs(&kubeletconfig.Settings{NodeIPs: []string{"10.0.0.1"}}, m); len(got) != 1 || got[0] != "10.0.0.1" {
		t.Errorf("--node-ip not used: %v", got)
	}
	if got := hostIPs(&kubeletconfig.Settings{}, m); len(got) != 1 || got[0] != "192.168.1.5" {
		t.Errorf("default-route IP not used: %v", got)
	}
	if got := hostIPs(&kubeletconfig.Settings{}, machineinfo.Info{}); got != nil {
		t.Errorf("no IP known, got %v", got)
	}
}

// A port in use fails the start with the endpoint named, and the
// listeners bound before it are released.
func TestListenFailsClearlyOnAPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()

	_, err = listen("127.0.0.1", int32(freePort), "127.0.0.1", int32(takenPort), nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "read-only endpoint") {
		t.Fatalf("err = %v, want the read-only endpoint named", err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort)))
	if err != nil {
		t.Fatalf("the healthz listener was not released: %v", err)
	}
	l.Close()
}

// Before the engine exists the real node's facts say the runtime is not
// connected (never "ready" by default).
func TestHostFactsBeforeTheEngine(t *testing.T) {
	h := &hostFacts{cfg: &nodestatus.Config{NodeName: "n", MaxPods: 110}, rootDir: t.TempDir()}
	f, err := h.NodeFacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Readiness.Errors) == 0 || f.Readiness.RuntimeReady {
		t.Errorf("readiness before the engine = %+v", f.Readiness)
	}
	if f.Capacity.Pods().Value() != 110 || f.Capacity.Cpu().IsZero() {
		t.Errorf("capacity = %v", f.Capacity)
	}
}
