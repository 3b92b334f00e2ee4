package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
)

// When KUBELET_TEST_MAIN is set the test binary behaves as the kubelet, so
// the exit status and stderr of main itself can be checked.
func TestMain(m *testing.M) {
	if os.Getenv("KUBELET_TEST_MAIN") == "1" {
		os.Args = append([]string{"kubelet"}, strings.Fields(os.Getenv("KUBELET_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
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
	if err != nil || out != "kubelet v0.1.0-dev\n" {
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
	if got == nil || got.NodeName != "n1" || got.Config.MaxPods != 30 || got.RootDir != dir || len(got.Warnings) != 1 {
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
