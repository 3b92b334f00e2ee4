// Package framework is what the integration and end-to-end tiers share:
// bringing up the project's test containerd, building the kubelet, running
// it as a process, clearing the runtime between tests, and bounded waits.
//
// Tests that use it run one at a time: a kubelet owns every pod in its
// runtime, so two kubelets must never share one containerd.
package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// WaitLimit bounds every wait: a failure bound, not a performance goal.
const WaitLimit = 90 * time.Second

// RepoRoot is the repository root, found from the test's directory.
func RepoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return wd
}

// DiskConfig is the disk settings (image GC off, absolute eviction
// thresholds) of every kubelet configuration the tests and benchmarks write
// (test/kubelet-disk.yaml says why), to be appended to a
// KubeletConfiguration document. Its evictionHard block comes last.
func DiskConfig() (string, error) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "test", "kubelet-disk.yaml"))
	if err != nil {
		return "", fmt.Errorf("the tests' disk settings: %w", err)
	}
	return string(b), nil
}

// Instance is the project's containerd instance the tests bring up and
// restart (GOKUBELET_TEST_INSTANCE, default "test"; hack/test.sh runs the
// integration tier once more on instance "test16" with Debian's
// containerd 1.6). Which containerd it runs is hack/containerd.sh's
// CONTAINERD_FLAVOR, inherited from the environment.
func Instance() string {
	if i := os.Getenv("GOKUBELET_TEST_INSTANCE"); i != "" {
		return i
	}
	return "test"
}

// CRIEndpoint is the test runtime's endpoint (GOKUBELET_CRI_ENDPOINT, or the
// socket of Instance's containerd).
func CRIEndpoint() string {
	if e := os.Getenv("GOKUBELET_CRI_ENDPOINT"); e != "" {
		return e
	}
	return instanceEndpoint()
}

func instanceEndpoint() string { return "unix:///run/gokubelet/" + Instance() + "/containerd.sock" }

// Script runs a hack/ script (a path relative to the repository root) in
// the repository root; env entries (KEY=value) are added to its environment.
func Script(root string, env []string, args ...string) error {
	cmd := exec.Command(filepath.Join(root, args[0]), args[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %v\n%s", args, err, out)
	}
	return nil
}

// Setup brings up the test containerd with the local images, builds the
// kubelet into dir and connects to the runtime. Both scripts are idempotent
// and quick when everything is in place.
func Setup(root, dir string) (kubeletBin string, rt cri.RuntimeService, err error) {
	for _, args := range [][]string{{"hack/containerd.sh", "up", Instance()}, {"hack/images.sh", Instance()}} {
		if err := Script(root, nil, args...); err != nil {
			return "", nil, err
		}
	}
	kubeletBin = filepath.Join(dir, "kubelet")
	build := exec.Command("go", "build", "-o", kubeletBin, "./cmd/kubelet")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the kubelet: %v\n%s", err, out)
	}
	rt, err = remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(CRIEndpoint()).WithConnectionTimeout(10 * time.Second).WithTracerProvider(nil).Build(context.Background())
	if err != nil {
		return "", nil, fmt.Errorf("CRI at %s: %w", CRIEndpoint(), err)
	}
	if _, err := rt.Version(context.Background(), ""); err != nil {
		return "", nil, fmt.Errorf("CRI at %s does not answer: %w", CRIEndpoint(), err)
	}
	return kubeletBin, rt, ClearRuntime(rt)
}

// ClearRuntime removes every pod sandbox (and so every container). A
// sandbox that disappears meanwhile (a kubelet removing it) counts as done.
// When the project's own test containerd refuses (containerd 1.6 can keep a
// container "in starting state" after a crash mid-start, until restarted),
// that instance is restarted once and cleared again.
func ClearRuntime(rt cri.RuntimeService) error {
	err := clearRuntime(rt)
	if err == nil || CRIEndpoint() != instanceEndpoint() {
		return err
	}
	fmt.Fprintf(os.Stderr, "framework: clearing the runtime failed (%v); restarting the test containerd\n", err)
	root := RepoRoot()
	for _, args := range [][]string{{"hack/containerd.sh", "down", Instance()}, {"hack/containerd.sh", "up", Instance()}, {"hack/images.sh", Instance()}} {
		if serr := Script(root, nil, args...); serr != nil {
			return fmt.Errorf("%v; then restarting containerd: %w", err, serr)
		}
	}
	return clearRuntime(rt)
}

func clearRuntime(rt cri.RuntimeService) error {
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := rt.StopPodSandbox(ctx, sb.Id); err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("stop sandbox %s: %w", sb.Id, err)
		}
		if err := rt.RemovePodSandbox(ctx, sb.Id); err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("remove sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// ClusterLock is held by whatever drives the local cluster's node (the e2e
// tier, the benchmark), so two of them never claim the Node at once.
const ClusterLock = "/run/gokubelet/cluster.lock"

// LockCluster takes ClusterLock, waiting for the holder to finish; the
// returned func releases it.
func LockCluster() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(ClusterLock), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(ClusterLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", ClusterLock, err)
	}
	return func() { f.Close() }, nil
}

// FreePort returns a free loopback TCP port.
func FreePort(t *testing.T) int {
	t.Helper()
	p, err := FreeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreeTCPPort returns a TCP port free on every address, below the
// kernel's ephemeral range. A port the kernel hands out for ":0" lies in
// that range, where any outgoing connection on the machine may take it
// between this check and the kubelet's bind ("address already in use");
// outgoing connections never take a port below the range.
func FreeTCPPort() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first = 10000
	if low-first < 1000 {
		return 0, fmt.Errorf("the ephemeral port range starts at %d: no room below it for test ports", low)
	}
	for range 200 {
		port := first + rand.IntN(low-first)
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free TCP port found in [%d, %d)", first, low)
}

// Eventually polls cond every 100ms until it holds, failing the test at
// WaitLimit with the last observation.
func Eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	EventuallyWithin(t, WaitLimit, what, cond)
}

// EventuallyWithin is Eventually with its own failure bound, for conditions
// that wait on another component's period (metrics-server scrapes every
// 15s and needs two scrapes for a rate).
func EventuallyWithin(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %s", what, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// HTTPGet returns the status and body of a GET (0 and the error on failure).
func HTTPGet(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	return strings.Join(parts, "\n")
}

// LogOnFailure keeps a process's log when t has failed: the whole log goes
// to _output/test-logs/<test>-<what>.log and t names the file. The log is
// not printed: a failed test's own messages then stay the last lines before
// its FAIL, where an excerpt of the run (CI's) shows them, instead of being
// pushed out by hundreds of log lines.
func LogOnFailure(t *testing.T, what, log string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name() + "-" + what)
	dir := filepath.Join(RepoRoot(), "_output", "test-logs")
	path := filepath.Join(dir, name+".log")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		// A test with two processes of the same kind (two nodes) keeps
		// both logs: the second gets its own file, never the first's.
		var f *os.File
		for i := 2; ; i++ {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if !os.IsExist(err) || i > 99 {
				break
			}
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, i))
		}
		if err == nil {
			_, err = f.WriteString(log)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err == nil {
		t.Logf("%s log (%d lines): %s", what, strings.Count(log, "\n"), path)
		return
	}
	t.Logf("%s log (could not be written to %s: %v), its last 100 lines:\n%s", what, path, err, Tail(log, 100))
}

// Kubelet is a kubelet process under test.
type Kubelet struct {
	Bin         string
	Args        []string
	HealthzPort int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    syncBuffer
	// pins names the tests that run beside others on this kubelet (Pin):
	// while there is any, it may not be started or stopped.
	pins []string
}

// Pin keeps the kubelet as it runs for the rest of t: t runs in parallel
// with other tests that use it, so a Start, Stop or signal from anyone
// until t ends is a test bug, and fails.
func (k *Kubelet) Pin(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	k.pins = append(k.pins, t.Name())
	k.mu.Unlock()
	t.Cleanup(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		for i, n := range k.pins {
			if n == t.Name() {
				k.pins = append(k.pins[:i], k.pins[i+1:]...)
				break
			}
		}
	})
}

// pinnedLocked is the error of a start or stop while tests pin the kubelet.
func (k *Kubelet) pinnedLocked(what string) error {
	if len(k.pins) == 0 {
		return nil
	}
	return fmt.Errorf("%s the shared kubelet while %v run beside other tests on it (Kubelet.Pin)", what, k.pins)
}

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

// Log is everything the kubelet printed, across restarts.
func (k *Kubelet) Log() string { return k.log.String() }

// Start launches the kubelet and waits until its healthz answers ok.
func (k *Kubelet) Start(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	if err := k.pinnedLocked("starting"); err != nil {
		k.mu.Unlock()
		t.Fatal(err)
	}
	cmd := exec.Command(k.Bin, k.Args...)
	cmd.Stdout, cmd.Stderr = &k.log, &k.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		k.mu.Unlock()
		t.Fatalf("starting the kubelet: %v", err)
	}
	k.cmd = cmd
	exited := make(chan struct{})
	k.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	k.mu.Unlock()
	Eventually(t, "kubelet healthz answers ok", func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("kubelet exited at start:\n%s", Tail(k.Log(), 50))
		default:
		}
		code, body := HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.HealthzPort))
		return code == 200 && body == "ok", fmt.Sprintf("%d %q", code, body)
	})
}

// Stop sends SIGTERM and waits for the exit.
func (k *Kubelet) Stop(t *testing.T) {
	if err := k.Signal(syscall.SIGTERM); err != nil {
		t.Error(err)
	}
}

// Kill9 kills the kubelet with SIGKILL, as a crash would.
func (k *Kubelet) Kill9(t *testing.T) {
	if err := k.Signal(syscall.SIGKILL); err != nil {
		t.Error(err)
	}
}

// Signal sends sig and waits for the exit (SIGKILL after 30s).
func (k *Kubelet) Signal(sig syscall.Signal) error {
	k.mu.Lock()
	if err := k.pinnedLocked("signalling (" + sig.String() + ")"); err != nil {
		k.mu.Unlock()
		return err
	}
	cmd, exited := k.cmd, k.exited
	k.cmd = nil
	k.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("kubelet did not exit on %v within 30s", sig)
	}
}

// ClusterEnvFile is where hack/cluster.sh writes what a node of the local
// cluster needs (NODE_NAME, NODE_IP, NODE_KUBECONFIG, ...).
const ClusterEnvFile = "/var/lib/gokubelet/cluster/kubelet-env"

// ReadClusterEnv reads the KEY=value lines of a kubelet-env file and checks
// that the node's name, IP and kubeconfig are there.
func ReadClusterEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && !strings.HasPrefix(k, "#") {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	for _, k := range []string{"NODE_NAME", "NODE_IP", "NODE_KUBECONFIG"} {
		if out[k] == "" {
			return nil, fmt.Errorf("%s has no %s", path, k)
		}
	}
	return out, nil
}
