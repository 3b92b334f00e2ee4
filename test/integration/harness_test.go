// Package integration runs the real kubelet binary against a real
// containerd (the project's "test" instance, started by the harness when it
// is not running) and checks what a user would see: /pods, the runtime's
// own view through CRI, and the kubelet's log.
//
// Tests run one at a time: a kubelet owns every pod in its runtime and stops
// pods it does not know, so two kubelets must never share one containerd.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
)

const (
	testImage = "gokubelet.local/testimage:1.0"
	nodeName  = "itest"
	// waitLimit bounds every wait: a failure bound, not a performance goal.
	waitLimit = 90 * time.Second
)

var (
	repoRoot    string
	kubeletBin  string
	criEndpoint string
	runtimeSvc  cri.RuntimeService
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, _ := os.Getwd()
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	criEndpoint = os.Getenv("GOKUBELET_CRI_ENDPOINT")
	if criEndpoint == "" {
		criEndpoint = "unix:///run/gokubelet/test/containerd.sock"
	}
	// The harness brings up its runtime when absent; both scripts are
	// idempotent and quick when everything is in place.
	for _, args := range [][]string{{"hack/containerd.sh", "up", "test"}, {"hack/images.sh", "test"}} {
		cmd := exec.Command(filepath.Join(repoRoot, args[0]), args[1:]...)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: %v failed: %v\n%s", args, err, out)
			return 1
		}
	}
	tmp, err := os.MkdirTemp("", "gokubelet-itest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	kubeletBin = filepath.Join(tmp, "kubelet")
	build := exec.Command("go", "build", "-o", kubeletBin, "./cmd/kubelet")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: building the kubelet: %v\n%s", err, out)
		return 1
	}
	logger := klog.Background()
	runtimeSvc, err = remote.NewRemoteRuntimeService(criEndpoint, 10*time.Second, nil, &logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: CRI at %s: %v\n", criEndpoint, err)
		return 1
	}
	if _, err := runtimeSvc.Version(context.Background(), ""); err != nil {
		fmt.Fprintf(os.Stderr, "integration: CRI at %s does not answer: %v\n", criEndpoint, err)
		return 1
	}
	if err := clearRuntime(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: clearing leftovers: %v\n", err)
		return 1
	}
	return m.Run()
}

// clearRuntime removes every pod sandbox (and so every container) from the
// test runtime, so each test starts from nothing.
func clearRuntime() error {
	ctx := context.Background()
	sbs, err := runtimeSvc.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := runtimeSvc.StopPodSandbox(ctx, sb.Id); err != nil {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
		if err := runtimeSvc.RemovePodSandbox(ctx, sb.Id); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// node is one kubelet process under test with its own directories.
type node struct {
	t           *testing.T
	dir         string
	manifests   string
	logsDir     string
	rootDir     string
	config      string
	roPort      int
	healthzPort int

	mu  sync.Mutex
	cmd *exec.Cmd
	log *syncBuffer
	// exited is closed when the current process exits.
	exited chan struct{}
}

// syncBuffer is a goroutine-safe log capture.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startNode starts a kubelet on a fresh manifest directory.
func startNode(t *testing.T) *node {
	t.Helper()
	if err := clearRuntime(); err != nil {
		t.Fatalf("clearing the runtime: %v", err)
	}
	dir := t.TempDir()
	n := &node{t: t, dir: dir, manifests: filepath.Join(dir, "manifests"), logsDir: filepath.Join(dir, "pod-logs"),
		rootDir: filepath.Join(dir, "root"), config: filepath.Join(dir, "config.yaml"), roPort: freePort(t), healthzPort: freePort(t)}
	for _, d := range []string{n.manifests, n.logsDir, n.rootDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
address: 127.0.0.1
readOnlyPort: %d
healthzPort: %d
podLogsDir: %s
syncFrequency: 20s
`, n.manifests, criEndpoint, n.roPort, n.healthzPort, n.logsDir)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start()
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			t.Logf("kubelet log:\n%s", tail(n.log.String(), 200))
		}
		if err := clearRuntime(); err != nil {
			t.Errorf("clearing the runtime after the test: %v", err)
		}
	})
	return n
}

// start launches the kubelet and waits for healthz.
func (n *node) start() {
	n.t.Helper()
	n.mu.Lock()
	if n.log == nil {
		n.log = &syncBuffer{}
	}
	cmd := exec.Command(kubeletBin, "--config", n.config, "--root-dir", n.rootDir, "--hostname-override", nodeName, "-v", "3")
	cmd.Stdout, cmd.Stderr = n.log, n.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		n.t.Fatalf("starting the kubelet: %v", err)
	}
	n.cmd = cmd
	exited := make(chan struct{})
	n.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	n.mu.Unlock()
	n.eventually("healthz answers ok", func() (bool, string) {
		select {
		case <-exited:
			n.t.Fatalf("kubelet exited at start:\n%s", tail(n.log.String(), 50))
		default:
		}
		code, body := httpGet(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthzPort))
		return code == 200 && body == "ok", fmt.Sprintf("%d %q", code, body)
	})
}

// stop sends SIGTERM and waits for the exit.
func (n *node) stop() { n.signal(syscall.SIGTERM) }

// kill9 kills the kubelet with SIGKILL, as a crash would.
func (n *node) kill9() { n.signal(syscall.SIGKILL) }

func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		n.t.Errorf("kubelet did not exit on %v within 30s", sig)
	}
}

func (n *node) writeManifest(name, content string) {
	n.t.Helper()
	// Write then rename, as editors and config tools do, so the source never
	// reads half a file.
	tmp := filepath.Join(n.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n.manifests, name)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) removeManifest(name string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.manifests, name)); err != nil {
		n.t.Fatal(err)
	}
}

// pods reads /pods from the read-only port.
func (n *node) pods() ([]v1.Pod, error) {
	code, body := httpGet(fmt.Sprintf("http://127.0.0.1:%d/pods", n.roPort))
	if code != 200 {
		return nil, fmt.Errorf("/pods: %d %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// pod returns the named static pod (without the node suffix) from /pods.
func (n *node) pod(name string) (*v1.Pod, bool) {
	pods, err := n.pods()
	if err != nil {
		return nil, false
	}
	for i := range pods {
		if pods[i].Name == name+"-"+nodeName {
			return &pods[i], true
		}
	}
	return nil, false
}

// waitPod waits until the named pod satisfies cond and returns it.
func (n *node) waitPod(name, what string, cond func(p *v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var last *v1.Pod
	n.eventually(name+": "+what, func() (bool, string) {
		p, ok := n.pod(name)
		if !ok {
			return false, "pod not in /pods"
		}
		last = p
		return cond(p), describe(p)
	})
	return last
}

// eventually polls cond until it holds, failing the test at waitLimit with
// the last observation.
func (n *node) eventually(what string, cond func() (bool, string)) {
	n.t.Helper()
	deadline := time.Now().Add(waitLimit)
	var seen string
	for {
		ok, s := cond()
		if ok {
			return
		}
		seen = s
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out waiting for %s; last seen: %s", what, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runtimePod lists the sandboxes and containers the runtime holds for a pod
// UID, including exited ones.
func runtimePod(t *testing.T, uid string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	t.Helper()
	ctx := context.Background()
	sbs, err := runtimeSvc.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := runtimeSvc.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	if err != nil {
		t.Fatal(err)
	}
	return sbs, cs
}

func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func describe(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%s", p.Status.Phase, p.Status.Reason)
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			fmt.Fprintf(&b, " [%s restarts=%d ready=%v", c.Name, c.RestartCount, c.Ready)
			switch {
			case c.State.Waiting != nil:
				fmt.Fprintf(&b, " waiting:%s %s", c.State.Waiting.Reason, c.State.Waiting.Message)
			case c.State.Running != nil:
				fmt.Fprintf(&b, " running")
			case c.State.Terminated != nil:
				fmt.Fprintf(&b, " terminated:%s exit=%d", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

func isRunningReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// manifest renders a one-container static pod.
func manifest(name string, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
%s`, name, extra)
}
