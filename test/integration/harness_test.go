// Package integration runs the real kubelet binary against a real
// containerd (the project's containerd instance framework.Instance(),
// started by the harness when it is not running) and checks what a user
// would see: /pods, the runtime's own view through CRI, and the kubelet's
// log.
//
// Tests run one at a time: a kubelet owns every pod in its runtime and stops
// pods it does not know, so two kubelets must never share one containerd.
// Their pods live under a cgroup root of this run's own (podCgroupRoot), so
// that the tier can run beside a kubelet of another tier on this machine
// (make test runs it beside the end-to-end tier): neither sees, limits nor
// sweeps the other's pod cgroups.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/test/framework"
)

// nodeName is the kubelet's --hostname-override; static pods are named
// <name>-itest.
const nodeName = "itest"

var (
	repoRoot   string
	kubeletBin string
	runtimeSvc cri.RuntimeService
	// clientCA signs the client certificates the tests present to the
	// kubelet API (standalone: x509 authentication, AlwaysAllow).
	clientCA *framework.CA
	// podCgroupRoot is every test kubelet's cgroupRoot, unless a test sets
	// its own: this run's, removed when it ends.
	podCgroupRoot = fmt.Sprintf("/gokubelet-itest-%s-%d", framework.Instance(), os.Getpid())
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	repoRoot = framework.RepoRoot()
	tmp, err := os.MkdirTemp("", "gokubelet-itest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	kubeletBin, runtimeSvc, err = framework.Setup(repoRoot, tmp)
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	if clientCA, err = framework.NewCA(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	if l, err := cgroups.Detect(); err == nil {
		defer func() {
			for _, mnt := range l.MountPoints() {
				removeCgroupTree(filepath.Join(mnt, podCgroupRoot))
			}
		}()
	}
	return m.Run()
}

// node is one standalone kubelet under test with its own directories.
type node struct {
	framework.Kubelet
	t         *testing.T
	dir       string
	manifests string
	logsDir   string
	rootDir   string
	config    string
	roPort    int
	// apiPort is the kubelet API's port (port), on 127.0.0.1.
	apiPort int
}

// startNode starts a kubelet on a fresh manifest directory.
func startNode(t *testing.T) *node {
	t.Helper()
	return startNodeWith(t, "")
}

// startNodeWith starts a kubelet with extra KubeletConfiguration lines.
func startNodeWith(t *testing.T, extraConfig string) *node {
	t.Helper()
	if err := framework.ClearRuntime(runtimeSvc); err != nil {
		t.Fatalf("clearing the runtime: %v", err)
	}
	dir := t.TempDir()
	n := &node{t: t, dir: dir, manifests: filepath.Join(dir, "manifests"), logsDir: filepath.Join(dir, "pod-logs"),
		rootDir: filepath.Join(dir, "root"), config: filepath.Join(dir, "config.yaml"), roPort: framework.FreePort(t), apiPort: framework.FreePort(t)}
	n.HealthzPort = framework.FreePort(t)
	for _, d := range []string{n.manifests, n.logsDir, n.rootDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := framework.DiskConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^cgroupRoot:`).MatchString(extraConfig) {
		extraConfig = "cgroupRoot: " + podCgroupRoot + "\n" + extraConfig
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
address: 127.0.0.1
readOnlyPort: %d
port: %d
authentication:
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
healthzPort: %d
podLogsDir: %s
syncFrequency: 20s
%s%s`, n.manifests, framework.CRIEndpoint(), n.roPort, n.apiPort, clientCA.File, n.HealthzPort, n.logsDir, disk, extraConfig)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.Bin = kubeletBin
	n.Args = []string{"--config", n.config, "--root-dir", n.rootDir, "--hostname-override", nodeName, "-v", "3"}
	n.Start(t)
	t.Cleanup(func() {
		n.Stop(t)
		// The kubelet makes its root directory a shared bind mount on a
		// host where / is private (and leaves it, as upstream's does).
		if err := hostfs.UnmountAll(n.rootDir); err != nil {
			t.Errorf("unmounting under %s: %v", n.rootDir, err)
		}
		framework.LogOnFailure(t, "kubelet", n.Log())
		if err := framework.ClearRuntime(runtimeSvc); err != nil {
			t.Errorf("clearing the runtime after the test: %v", err)
		}
	})
	return n
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
	code, body := framework.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/pods", n.roPort))
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
	framework.Eventually(n.t, name+": "+what, func() (bool, string) {
		p, ok := n.pod(name)
		if !ok {
			return false, "pod not in /pods"
		}
		last = p
		return cond(p), describe(p)
	})
	return last
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
