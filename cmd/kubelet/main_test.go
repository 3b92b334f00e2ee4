package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/config/features"
	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

// When KUBELET_TEST_MAIN is set the test binary behaves as the kubelet, so
// the exit status and stderr of main itself can be checked.
func TestMain(m *testing.M) {
	if os.Getenv("KUBELET_TEST_MAIN") == "1" {
		runKubelet = func(ctx context.Context, s *kubeletconfig.Settings) error {
			klog.FromContext(ctx).Info("Test run instead of the kubelet", "node", s.NodeName)
			klog.InfoS("Test run instead of the kubelet", "node", s.NodeName)
			return nil
		}
		os.Args = append([]string{"kubelet"}, strings.Fields(os.Getenv("KUBELET_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	// Logging takes effect once per process: in-process runs only record
	// what would be applied.
	applyLogging = func(c *logsapi.LoggingConfiguration, _ featuregate.FeatureGate) error {
		appliedLogging = c
		return nil
	}
	os.Exit(m.Run())
}

var appliedLogging *logsapi.LoggingConfiguration

// runMain runs the real main (test binary re-executed as the kubelet) with
// args, kubelet.Run replaced by an immediate return, and returns its exit
// code and stderr.
func runMain(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KUBELET_TEST_MAIN=1", "KUBELET_TEST_ARGS="+strings.Join(args, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

func execute(t *testing.T, run runFunc, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newCommand(context.Background(), &out, &errb, run)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

func noRun(t *testing.T) runFunc {
	return func(context.Context, *kubeletconfig.Settings) error {
		t.Error("kubelet.Run must not be called")
		return nil
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	out, _, err := execute(t, noRun(t), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		"--config", "--kubeconfig", "--bootstrap-kubeconfig", "--hostname-override", "--node-ip",
		"--container-runtime-endpoint", "--root-dir", "--cert-dir", "--pod-manifest-path", "--manifest-url",
		"--node-labels", "--register-with-taints", "--register-node", "--healthz-port", "--healthz-bind-address",
		"--read-only-port", "--address", "--port", "--max-pods", "--cgroup-driver", "--fail-swap-on",
		"--sync-frequency", "--file-check-frequency", "--http-check-frequency", "--kube-api-qps",
		"--kube-api-burst", "--pod-infra-container-image", "-v, --v", "--vmodule", "--version",
	} {
		if !strings.Contains(out, f+" ") && !strings.Contains(out, f+"[") {
			t.Errorf("--help does not list %s", f)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := execute(t, noRun(t), "--version")
	// The upstream form, which kubeadm's preflight parses
	// (^\s*Kubernetes v(\d+\.\d+\.\d+[-\w.+]*)\s*$).
	if err != nil || out != "Kubernetes v1.37.2+gokubelet.0.1.0-dev\n" {
		t.Errorf("got %q, %v", out, err)
	}
}

func TestRunGetsSettings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "k.yaml")
	os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 20\ncpuManagerPolicy: static\n"), 0o600)
	var got *kubeletconfig.Settings
	run := func(ctx context.Context, s *kubeletconfig.Settings) error {
		got = s
		return nil
	}
	_, _, err := execute(t, run, "--config", cfg, "--hostname-override=N1", "--max_pods=30", "-v=2", "--root-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	// Warnings: the unimplemented field, and the gates on whose feature
	// this kubelet lacks.
	if got == nil || got.NodeName != "n1" || got.Config.MaxPods != 30 || got.RootDir != dir || len(got.Warnings) != 2 {
		t.Errorf("settings = %+v", got)
	}

	wantErr := errors.New("runtime unreachable")
	_, _, err = execute(t, func(context.Context, *kubeletconfig.Settings) error { return wantErr }, "--hostname-override=n1")
	if !errors.Is(err, wantErr) {
		t.Errorf("Run's error must be returned, got %v", err)
	}
}

func TestConfigErrorsStopBeforeRun(t *testing.T) {
	for _, args := range [][]string{
		{"--healthz-port=70000"},
		{"--config=/nonexistent.yaml"},
		{"--no-such-flag"},
		{"positional"},
	} {
		if _, _, err := execute(t, noRun(t), args...); err == nil {
			t.Errorf("%v: expected an error", args)
		}
	}
}

func TestMainExitsOneOnConfigError(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KUBELET_TEST_MAIN=1", "KUBELET_TEST_ARGS=--healthz-port=70000 --hostname-override=n1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v", err)
	}
	if !strings.Contains(stderr.String(), "healthzPort: Invalid value: 70000") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

// --logging-format=json (or logging.format: json in the file) turns every
// log line into a JSON object, as the upstream kubelet's; text stays klog's
// header format.
func TestJSONLogFormat(t *testing.T) {
	dir := t.TempDir()
	code, out := runMain(t, "--logging-format=json", "--hostname-override=n1", "--root-dir", dir, "--cpu-manager-policy=static")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sawStart, sawWarning bool
	for _, l := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Fatalf("not a JSON log line: %q (%v)\nall output:\n%s", l, err, out)
		}
		if entry["msg"] == "Starting kubelet" && entry["node"] == "n1" {
			sawStart = true
		}
		if msg, _ := entry["msg"].(string); strings.Contains(msg, "--cpu-manager-policy") {
			sawWarning = true
		}
	}
	if !sawStart || !sawWarning {
		t.Errorf("JSON output lacks the start line or the flag warning:\n%s", out)
	}

	cfg := filepath.Join(dir, "k.yaml")
	os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nlogging:\n  format: json\ncpuManagerPolicy: static\n"), 0o600)
	code, out = runMain(t, "--config", cfg, "--hostname-override=n1", "--root-dir", dir)
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("logging.format json in the file: exit %d, output:\n%s", code, out)
	}
	// The unimplemented field is named in a logged warning.
	if !strings.Contains(out, `cpuManagerPolicy`) || !strings.Contains(out, "not implemented") {
		t.Errorf("no warning naming cpuManagerPolicy:\n%s", out)
	}
	code, out = runMain(t, "--hostname-override=n1", "--root-dir", dir)
	if code != 0 || !strings.Contains(out, `"Starting kubelet"`) || strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("text format: exit %d, output:\n%s", code, out)
	}
	code, out = runMain(t, "--logging-format=yaml", "--hostname-override=n1", "--root-dir", dir)
	if code != 1 || !strings.Contains(out, "yaml") {
		t.Errorf("unknown format: exit %d, output:\n%s", code, out)
	}
}

// Upstream flags this kubelet does not implement are accepted and named in
// a warning; upstream flags of implemented fields take effect (issue 22:
// --image-gc-high-threshold and others used to be ignored with a warning);
// unknown flags are still errors.
func TestUpstreamFlagsAcceptedWithWarning(t *testing.T) {
	var got *kubeletconfig.Settings
	run := func(_ context.Context, s *kubeletconfig.Settings) error { got = s; return nil }
	_, _, err := execute(t, run, "--hostname-override=n1", "--root-dir", t.TempDir(),
		"--cpu-manager-policy=static", "--protect-kernel-defaults", "--registry-qps", "3",
		"--image-gc-high-threshold", "90", "--pod-max-pids=100", "--cgroups-per-qos=false", "--enforce-node-allocatable=",
		"--eviction-hard", "memory.available<1Gi", "--cluster-dns=10.0.0.10,10.0.0.11")
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.EvictionHard["memory.available"] != "1Gi" || len(got.Config.EvictionHard) != 1 || strings.Join(got.Config.ClusterDNS, ",") != "10.0.0.10,10.0.0.11" {
		t.Errorf("implemented upstream flags not applied: evictionHard=%v clusterDNS=%v", got.Config.EvictionHard, got.Config.ClusterDNS)
	}
	if *got.Config.ImageGCHighThresholdPercent != 90 || *got.Config.PodPidsLimit != 100 || *got.Config.CgroupsPerQOS || len(got.Config.EnforceNodeAllocatable) != 0 {
		t.Errorf("implemented upstream flags not applied: imageGCHighThresholdPercent=%d podPidsLimit=%d cgroupsPerQOS=%v enforceNodeAllocatable=%v",
			*got.Config.ImageGCHighThresholdPercent, *got.Config.PodPidsLimit, *got.Config.CgroupsPerQOS, got.Config.EnforceNodeAllocatable)
	}
	for _, w := range got.Warnings {
		for _, f := range []string{"--image-gc-high-threshold", "--pod-max-pids", "--cgroups-per-qos", "--enforce-node-allocatable"} {
			if strings.Contains(w, f+" ") {
				t.Errorf("implemented flag %s is warned about: %s", f, w)
			}
		}
	}
	for _, f := range []string{"--cpu-manager-policy", "--protect-kernel-defaults", "--registry-qps"} {
		found := false
		for _, w := range got.Warnings {
			if strings.Contains(w, f+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning names %s: %v", f, got.Warnings)
		}
	}
	if _, _, err := execute(t, noRun(t), "--hostname-override=n1", "--no-such-upstream-flag"); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

// Feature gates: known upstream gates are accepted, unknown ones and
// changes of locked gates are refused, flags win over the file. One
// warning names the gates on whose feature this kubelet lacks (MemoryQoS
// turned on here, not KubeletSeparateDiskGC turned off); a gate with no
// kubelet feature set to a non-default value is warned about by itself; a
// wired gate turned off is not warned about, it takes effect. (The gates
// used are unlocked in upstream 1.34 and 1.37 alike.)
func TestFeatureGates(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "k.yaml")
	os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  KubeletSeparateDiskGC: false\n  LoggingBetaOptions: false\n  MemoryQoS: false\n  PodDeletionCost: false\n"), 0o600)
	var got *kubeletconfig.Settings
	run := func(_ context.Context, s *kubeletconfig.Settings) error { got = s; return nil }
	if _, _, err := execute(t, run, "--config", cfg, "--hostname-override=n1", "--root-dir", dir, "--feature-gates=MemoryQoS=true,RotateKubeletServerCertificate=false"); err != nil {
		t.Fatal(err)
	}
	if got.FeatureGates.Enabled("KubeletSeparateDiskGC") || got.FeatureGates.Enabled("LoggingBetaOptions") || !got.FeatureGates.Enabled("MemoryQoS") {
		t.Errorf("effective gates wrong: KubeletSeparateDiskGC=%v LoggingBetaOptions=%v MemoryQoS=%v", got.FeatureGates.Enabled("KubeletSeparateDiskGC"),
			got.FeatureGates.Enabled("LoggingBetaOptions"), got.FeatureGates.Enabled("MemoryQoS"))
	}
	if got.Features.Enabled(features.RotateKubeletServerCertificate) || !got.Features.Enabled(features.ReloadKubeletServerCertificateFile) {
		t.Errorf("wired features: RotateKubeletServerCertificate=%v ReloadKubeletServerCertificateFile=%v",
			got.Features.Enabled(features.RotateKubeletServerCertificate), got.Features.Enabled(features.ReloadKubeletServerCertificateFile))
	}
	if got.Config.FeatureGates["MemoryQoS"] != true {
		t.Errorf("the flag's gate is not in the effective configuration: %v", got.Config.FeatureGates)
	}
	var lacking string
	for _, w := range got.Warnings {
		if strings.HasPrefix(w, "feature gates on whose feature this kubelet lacks") {
			lacking = w
		}
	}
	if !strings.Contains(lacking, "MemoryQoS") || strings.Contains(lacking, "KubeletSeparateDiskGC") {
		t.Errorf("lacking-feature warning: %q", lacking)
	}
	warned := strings.Join(got.Warnings, "\n")
	if !strings.Contains(warned, "PodDeletionCost=false is not acted on") {
		t.Errorf("no warning about PodDeletionCost=false:\n%s", warned)
	}
	for _, quiet := range []string{"LoggingBetaOptions", "RotateKubeletServerCertificate", "KubeletSeparateDiskGC"} {
		if strings.Contains(warned, quiet) {
			t.Errorf("%s was warned about:\n%s", quiet, warned)
		}
	}
	for _, bad := range []string{"--feature-gates=NoSuchGate=true", "--feature-gates=KubeletPSI=false"} {
		_, _, err := execute(t, noRun(t), "--hostname-override=n1", bad)
		if err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// Regression (issue 22): a KubeletConfiguration of the kind kubeadm 1.37
// writes, with a field of a newer kubelet, starts the kubelet with a
// warning naming the field instead of being refused.
func TestNewerConfigFieldStartsWithWarning(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "k.yaml")
	os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntlsCurvePreferences: [23]\ncgroupDriver: systemd\n"), 0o600)
	var got *kubeletconfig.Settings
	run := func(_ context.Context, s *kubeletconfig.Settings) error { got = s; return nil }
	if _, _, err := execute(t, run, "--config", cfg, "--hostname-override=n1", "--root-dir", dir); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if got == nil || got.Config.CgroupDriver != "systemd" {
		t.Fatalf("settings = %+v", got)
	}
	// Unknown to k8s.io/kubelet before 1.35 (decoded leniently), known
	// but not implemented after: named either way.
	if w := strings.Join(got.Warnings, "\n"); !strings.Contains(w, `"tlsCurvePreferences"`) {
		t.Errorf("no warning naming the field:\n%s", w)
	}
}
