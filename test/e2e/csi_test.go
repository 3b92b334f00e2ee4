package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/plugins/csi"
	"github.com/gokubelet/kubelet/test/framework"
)

// csiMock is upstream's mock CSI driver run as a node plugin, registering
// through the kubelet's plugins_registry (hack/csi-mock).
type csiMock struct {
	cmd      *osexec.Cmd
	said     chan string
	name     string
	endpoint string
	// registry is the plugins_registry its registration socket is in.
	registry string
	args     []string
	// exited is closed once the process ended and its output was read.
	exited chan struct{}

	// calls are the Node service calls it served, with -log-calls.
	mu    sync.Mutex
	calls []mockCall
}

// mockCall is one Node service call the mock served: the method, the
// gRPC code it answered and the request.
type mockCall struct {
	Method, Code string
	Req          map[string]any
}

// startCSIMock starts the driver named name; its registration socket is in
// the shared test kubelet's plugins_registry.
func startCSIMock(t *testing.T, name string, args ...string) *csiMock {
	t.Helper()
	return startCSIMockIn(t, filepath.Join(rootDir, "plugins_registry"), name, args...)
}

// startCSIMockIn starts the driver named name with its registration socket
// in registry, a kubelet's plugins_registry (created if missing: the
// kubelet watches it once it runs).
func startCSIMockIn(t *testing.T, registry, name string, args ...string) *csiMock {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi-mock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.MkdirAll(registry, 0o750); err != nil {
		t.Fatal(err)
	}
	return runCSIMock(t, name, registry, filepath.Join(dir, "csi.sock"), args)
}

// restart starts the driver again, as its DaemonSet would after it
// crashed: a new process on the same sockets, with the same flags and a
// fresh call log (the mock keeps its volumes in memory only).
func (m *csiMock) restart(t *testing.T) *csiMock {
	t.Helper()
	m.stop(t)
	return runCSIMock(t, m.name, m.registry, m.endpoint, m.args)
}

func runCSIMock(t *testing.T, name, registry, endpoint string, args []string) *csiMock {
	t.Helper()
	bin := os.Getenv("GOKUBELET_CSI_MOCK")
	if bin == "" {
		t.Fatal("GOKUBELET_CSI_MOCK is not set: run through make test (hack/test.sh builds upstream's mock CSI driver)")
	}
	m := &csiMock{name: name, endpoint: endpoint, registry: registry, args: args, said: make(chan string, 16)}
	reg := filepath.Join(registry, name+"-reg.sock")
	m.cmd = osexec.Command(bin, append([]string{"-endpoint", m.endpoint, "-registration", reg, "-name", name}, args...)...)
	out, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd.Stderr = os.Stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.exited = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "call "); ok {
				method, rest, _ := strings.Cut(rest, " ")
				code, body, _ := strings.Cut(rest, " ")
				c := mockCall{Method: method, Code: code}
				if err := json.Unmarshal([]byte(body), &c.Req); err != nil {
					c.Req = map[string]any{"unparsed": body}
				}
				m.mu.Lock()
				m.calls = append(m.calls, c)
				m.mu.Unlock()
				continue
			}
			m.said <- line
		}
		close(m.said)
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	t.Cleanup(func() { m.stop(t) })
	return m
}

// registered waits for the kubelet's registration status.
func (m *csiMock) registered(t *testing.T) {
	t.Helper()
	select {
	case s := <-m.said:
		if s != "registered" {
			t.Fatalf("driver %s: %s", m.name, s)
		}
	case <-time.After(framework.WaitLimit):
		t.Fatalf("driver %s was never told its registration status", m.name)
	}
}

// served returns the calls of method the mock served, in order.
func (m *csiMock) served(method string) []mockCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []mockCall
	for _, c := range m.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// stop ends the driver as a registrar stops: its registration socket goes.
func (m *csiMock) stop(t *testing.T) {
	_ = m.cmd.Process.Signal(syscall.SIGCONT)
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	<-m.exited
}

// signal sends the driver's process sig (SIGSTOP: a driver that accepts
// calls and never answers them; SIGKILL: a crash, leaving its sockets).
func (m *csiMock) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := m.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("driver %s: %v: %v", m.name, sig, err)
	}
	if sig == syscall.SIGKILL {
		<-m.exited
	}
}

// TestCSIDriverRegistration: upstream's mock CSI driver registers through
// plugins_registry; the node's CSINode, nodeid annotation and topology
// label show it; a kubelet restart keeps it; the driver's going removes
// all three.
func TestCSIDriverRegistration(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	driver := fmt.Sprintf("mock-%d.csi.gokubelet.io", time.Now().UnixNano()%100000)
	m := startCSIMock(t, driver, "-attach-limit", "7", "-topology")
	m.registered(t)

	const topologyKey, topologyValue = "io.kubernetes.storage.mock/node", "some-mock-node"
	shows := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			cn, err := client.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			entry := false
			for _, d := range cn.Spec.Drivers {
				if d.Name == driver {
					entry = d.NodeID == driver && d.Allocatable != nil && d.Allocatable.Count != nil && *d.Allocatable.Count == 7 &&
						len(d.TopologyKeys) == 1 && d.TopologyKeys[0] == topologyKey
				}
			}
			annotated := strings.Contains(n.Annotations[csi.AnnotationNodeID], `"`+driver+`":"`+driver+`"`)
			labelled := n.Labels[topologyKey] == topologyValue
			seen := fmt.Sprintf("CSINode drivers %+v; annotation %q; label %q; owners %v", cn.Spec.Drivers, n.Annotations[csi.AnnotationNodeID], n.Labels[topologyKey], cn.OwnerReferences)
			if !want {
				return !entry && !annotated && !labelled, seen
			}
			owned := len(cn.OwnerReferences) == 1 && cn.OwnerReferences[0].UID == n.UID
			return entry && annotated && labelled && owned, seen
		}
	}
	framework.Eventually(t, "the driver on the node's CSINode, annotation and labels", shows(true))

	// A pod with a volume of a driver the node does not have: kubectl
	// describe names the driver and the cause.
	ns := namespace(t)
	p := testPod("csi-missing")
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "absent.csi.gokubelet.io"}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	createPod(t, ns, p)
	framework.Eventually(t, "kubectl describe names the missing driver", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "describe", "pod", "csi-missing")
		return strings.Contains(out, `CSI driver "absent.csi.gokubelet.io" is not registered on this node`), out + errs
	})

	// A kubelet killed and started again finds the driver's socket and
	// registers it again.
	kubelet.Kill9(t)
	kubelet.Start(t)
	node(t)
	m.registered(t)
	framework.Eventually(t, "the driver still shown after a kubelet restart", shows(true))

	// The driver goes (its registrar removes the socket): all of it goes.
	m.stop(t)
	framework.Eventually(t, "the driver removed from the node's objects", shows(false))
}
