package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/gokubelet/kubelet/test/framework"
)

// clientCert is a certificate the kubelet API under test accepts.
func clientCert(t *testing.T) tls.Certificate {
	t.Helper()
	c, err := clientCA.ClientCert("itest-user")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// api calls the node's kubelet API with a client certificate.
func (n *node) api(t *testing.T, method, path string) (int, string) {
	t.Helper()
	c := clientCert(t)
	req, err := http.NewRequest(method, fmt.Sprintf("https://127.0.0.1:%d%s", n.apiPort, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := framework.APIClient(&c).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const chattyManifest = `apiVersion: v1
kind: Pod
metadata:
  name: chatty
  namespace: default
spec:
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "echo first; echo oops >&2; i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done"]
`

func TestKubeletAPIAgainstTheRuntime(t *testing.T) {
	n := startNode(t)
	n.writeManifest("chatty.yaml", chattyManifest)
	var pod *v1.Pod
	framework.Eventually(t, "chatty running", func() (bool, string) {
		p, ok := n.pod("chatty")
		if !ok || p.Status.Phase != v1.PodRunning {
			return false, fmt.Sprint(ok)
		}
		pod = p
		return true, ""
	})
	base := "/containerLogs/default/chatty-" + nodeName + "/main"

	// Without a client certificate: 401, whatever the path.
	for _, p := range []string{"/pods", base, "/runningpods/"} {
		resp, err := framework.APIClient(nil).Get(fmt.Sprintf("https://127.0.0.1:%d%s", n.apiPort, p))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s without credentials: %d", p, resp.StatusCode)
		}
	}

	// Logs from the runtime's real log file.
	framework.Eventually(t, "a few ticks logged", func() (bool, string) {
		code, body := n.api(t, "GET", base)
		return code == 200 && strings.Contains(body, "first\n") && strings.Contains(body, "oops\n") && strings.Contains(body, "tick-3\n"), fmt.Sprintf("%d %q", code, framework.Tail(body, 3))
	})
	code, body := n.api(t, "GET", base+"?tailLines=1&timestamps=true")
	if lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n"); code != 200 || len(lines) != 1 || !strings.Contains(lines[0], "Z tick-") {
		t.Errorf("tail 1 with timestamps: %d %q", code, body)
	}
	// stdout and stderr reach the file in either order: compare with the
	// start of the whole log.
	_, whole := n.api(t, "GET", base)
	if code, body := n.api(t, "GET", base+"?limitBytes=6"); code != 200 || len(body) != 6 || !strings.HasPrefix(whole, body) {
		t.Errorf("limitBytes: %d %q (log starts %q)", code, body, whole[:min(len(whole), 12)])
	}
	if code, body := n.api(t, "GET", base+"?previous=true"); code != 400 || !strings.Contains(body, "previous terminated container") {
		t.Errorf("previous of a container that never restarted: %d %q", code, body)
	}

	// Follow: new lines arrive on the open response.
	c := clientCert(t)
	ctx, cancel := context.WithTimeout(context.Background(), framework.WaitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("https://127.0.0.1:%d%s?follow=true&tailLines=0", n.apiPort, base), nil)
	resp, err := framework.APIClient(&c).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for len(seen) < 3 && sc.Scan() {
		seen = append(seen, sc.Text())
	}
	resp.Body.Close()
	if len(seen) < 3 || !strings.HasPrefix(seen[0], "tick-") || seen[0] == seen[1] {
		t.Errorf("followed lines: %q (%v)", seen, sc.Err())
	}

	// Exec over SPDY and WebSocket (v4, which containerd's streaming
	// server speaks) through the kubelet to containerd.
	cfg, err := framework.RESTConfig(fmt.Sprintf("https://127.0.0.1:%d", n.apiPort), clientCert(t))
	if err != nil {
		t.Fatal(err)
	}
	execURL, _ := url.Parse(fmt.Sprintf("%s/exec/default/chatty-%s/main?command=sh&command=-c&command=%s&output=1&error=1",
		cfg.Host, nodeName, url.QueryEscape("echo out; echo err >&2; exit 7")))
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", execURL)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := remotecommand.NewWebSocketExecutorForProtocols(cfg, "GET", execURL.String(), "v4.channel.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	for name, ex := range map[string]remotecommand.Executor{"SPDY": spdy, "WebSocket": ws} {
		var out, errb bytes.Buffer
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
		var exit utilexec.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 7 || out.String() != "out\n" || errb.String() != "err\n" {
			t.Errorf("%s exec: err %v, stdout %q, stderr %q", name, err, out.String(), errb.String())
		}
	}
	stdinURL, _ := url.Parse(fmt.Sprintf("%s/exec/default/chatty-%s/main?command=cat&input=1&output=1", cfg.Host, nodeName))
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", stdinURL)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("via stdin"), Stdout: &out}); err != nil || out.String() != "via stdin" {
		t.Errorf("exec with stdin: %v %q", err, out.String())
	}

	// /run runs a command to completion.
	if code, body := n.api(t, "POST", "/run/default/chatty-"+nodeName+"/main?cmd=echo+ran"); code != 200 || body != "ran\n" {
		t.Errorf("/run: %d %q", code, body)
	}
	if code, _ := n.api(t, "POST", "/run/default/chatty-"+nodeName+"/"+string(pod.UID)+"/main?cmd=true"); code != 200 {
		t.Errorf("/run with the pod's uid: %d", code)
	}

	// Node logs stay inside /var/log.
	if code, body := n.api(t, "GET", "/logs/"); code != 200 || !strings.Contains(body, "<a href=") {
		t.Errorf("/logs/: %d %q", code, framework.Tail(body, 3))
	}
	for _, p := range []string{"/logs/../etc/passwd", "/logs/%2e%2e/etc/passwd", "/logs/..%2f..%2fetc/passwd"} {
		if code, body := n.api(t, "GET", p); code == 200 || strings.Contains(body, "root:") {
			t.Errorf("%s escaped /var/log: %d %q", p, code, framework.Tail(body, 2))
		}
	}

	// /configz is the effective configuration.
	if code, body := n.api(t, "GET", "/configz"); code != 200 || !strings.Contains(body, `"kubeletconfig":`) || !strings.Contains(body, fmt.Sprintf(`"port":%d`, n.apiPort)) ||
		!strings.Contains(body, `"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1"`) {
		t.Errorf("/configz: %d %q", code, body)
	}
	// Unknown pods and containers.
	if code, _ := n.api(t, "GET", "/containerLogs/default/nope/main"); code != 404 {
		t.Errorf("logs of an unknown pod: %d", code)
	}
	if code, _ := n.api(t, "POST", "/run/default/chatty-"+nodeName+"/nope?cmd=true"); code != 404 {
		t.Errorf("run in an unknown container: %d", code)
	}
}
