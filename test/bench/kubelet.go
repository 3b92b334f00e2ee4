package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gokubelet/kubelet/test/framework"
)

// kubeletProc is one kubelet under test, started for one round.
type kubeletProc struct {
	kind    string // "ours" or "upstream"
	cmd     *exec.Cmd
	logPath string
	healthz int
	exited  chan struct{}
	started time.Time // just before the process was started
}

// kubeletConfig writes the KubeletConfiguration for kind into dir and returns
// the command line. Both kubelets get the same node identity, runtime,
// cluster domain and log verbosity; the upstream one needs a few settings
// more to run here (see docs/benchmarks.md).
func kubeletConfig(kind, bin, dir string, env map[string]string, criEndpoint string, verbosity int) ([]string, int, error) {
	healthz, err := framework.FreeTCPPort()
	if err != nil {
		return nil, 0, err
	}
	port, err := framework.FreeTCPPort()
	if err != nil {
		return nil, 0, err
	}
	static := filepath.Join(dir, "static")
	root := filepath.Join(dir, "root")
	for _, d := range []string{static, root, filepath.Join(dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, 0, err
		}
	}
	common := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
podLogsDir: %s
clusterDomain: %s
containerLogMaxSize: 200Mi
`, static, criEndpoint, env["NODE_IP"], port, healthz, filepath.Join(dir, "pod-logs"), orDefault(env["CLUSTER_DOMAIN"], "cluster.local"))
	// address: the node IP the API server dials for the log-tail
	// workload's requests. containerLogMaxSize: that workload's 100 MiB log
	// stays one file (livetail.go); the other workloads write a few bytes
	// per pod.
	if dns := env["CLUSTER_DNS"]; dns != "" {
		// As hack/node.sh configures a node of this cluster. Without it both
		// kubelets warn (MissingClusterDNS, one event on the pod and one on
		// the node) for every pod, which is not a node anyone runs.
		common += fmt.Sprintf("clusterDNS: [%q]\n", dns)
	}
	// The kubelet API as the API server reaches it (the log-tail workload's
	// requests): the cluster's serving certificate, client certificates of
	// the cluster CA, everything they ask allowed. Both kubelets the same;
	// the upstream one needs it also to run without extra RBAC (no webhook
	// authn/authz: the node identity may not create TokenReviews or
	// SubjectAccessReviews).
	common += fmt.Sprintf(`tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
`, env["KUBELET_TLS_CERT_FILE"], env["KUBELET_TLS_KEY_FILE"], env["CLUSTER_CA_FILE"])
	disk, err := framework.DiskConfig()
	if err != nil {
		return nil, 0, err
	}
	common += disk
	extra := ""
	if kind == "upstream" {
		// Settings the upstream kubelet needs on these machines (cgroup v1
		// hybrid, no swap accounting).
		extra = `failCgroupV1: false
resolvConf: /etc/resolv.conf
`
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(common+extra), 0o644); err != nil {
		return nil, 0, err
	}
	args := []string{bin, "--config", cfg, "--root-dir", root,
		"--kubeconfig", env["NODE_KUBECONFIG"], "--hostname-override", env["NODE_NAME"], "--node-ip", env["NODE_IP"],
		"-v", fmt.Sprint(verbosity)}
	if kind == "upstream" {
		// Its default is /var/lib/kubelet/pki, not under --root-dir.
		args = append(args, "--cert-dir", filepath.Join(root, "pki"))
	}
	return args, healthz, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func startKubelet(kind string, args []string, healthz int, logPath string) (*kubeletProc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	k := &kubeletProc{kind: kind, cmd: cmd, logPath: logPath, healthz: healthz, exited: make(chan struct{}), started: started}
	go func() { _ = cmd.Wait(); f.Close(); close(k.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-k.exited:
			return nil, fmt.Errorf("%s kubelet exited at start:\n%s", kind, tailFile(logPath, 30))
		default:
		}
		c := http.Client{Timeout: 2 * time.Second}
		if resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz)); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return k, nil
			}
		}
		if time.Now().After(deadline) {
			k.stop()
			return nil, fmt.Errorf("%s kubelet healthz not ok within 60s:\n%s", kind, tailFile(logPath, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kubeletProc) pid() int { return k.cmd.Process.Pid }

// stop sends SIGTERM, then SIGKILL after 15 s.
func (k *kubeletProc) stop() { stopProcess(k.cmd.Process, k.exited, 15*time.Second) }

// stopProcess sends p SIGTERM, then SIGKILL after grace, and returns once
// exited is closed.
func stopProcess(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
	}
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procSample reads a process's CPU ticks and memory figures (KiB).
type procSample struct {
	cpuTicks uint64
	hwmKB    uint64
	rssKB    uint64
	// anonKB is the anonymous part of rssKB (RssAnon): the process's own
	// memory, without the pages of its binary and of files it maps.
	anonKB uint64
	// fileKB is the file-backed part (RssFile): mostly the pages of the
	// kubelet's own binary.
	fileKB uint64
}

const clockTicks = 100 // USER_HZ on Linux

func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	var s procSample
	if s.cpuTicks, err = ParseProcStatCPU(string(stat)); err != nil {
		return s, err
	}
	if s.hwmKB, err = ParseProcStatusKB(string(status), "VmHWM"); err != nil {
		return s, err
	}
	if s.rssKB, err = ParseProcStatusKB(string(status), "VmRSS"); err != nil {
		return s, err
	}
	if s.anonKB, err = ParseProcStatusKB(string(status), "RssAnon"); err != nil {
		return s, err
	}
	s.fileKB, err = ParseProcStatusKB(string(status), "RssFile")
	return s, err
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux >= 4.0),
// so the peak covers one workload only.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
}

// unmountUnder detaches every mount at or below dir, deepest first: the
// upstream kubelet makes its root dir a shared bind mount of itself.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var targets []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if t := f[4]; t == dir || strings.HasPrefix(t, dir+"/") {
			targets = append(targets, t)
		}
	}
	for i := len(targets) - 1; i >= 0; i-- {
		_ = syscall.Unmount(targets[i], syscall.MNT_DETACH)
	}
}
