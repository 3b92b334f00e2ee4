package e2e

// kubectl against pods on this node: logs, exec, attach, port-forward.
// The API server proxies each to the kubelet API on 10250 (translating
// kubectl's WebSockets to SPDY); with KUBECTL_*_WEBSOCKETS=false kubectl
// speaks SPDY all the way.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// kubectlPath is kubectl on PATH, else /usr/bin/kubectl.
func kubectlPath() string {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return p
	}
	return "/usr/bin/kubectl"
}

// kubectlCmd is kubectl as the cluster admin, in namespace ns (none: the
// args say, or the default).
func kubectlCmd(ctx context.Context, env []string, ns string, args ...string) *exec.Cmd {
	all := []string{"--kubeconfig", filepath.Join(clusterDir, "admin.kubeconfig")}
	if ns != "" {
		all = append(all, "-n", ns)
	}
	all = append(all, args...)
	cmd := exec.CommandContext(ctx, kubectlPath(), all...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// kubectl runs kubectl to completion (bounded) and returns its stdout,
// stderr and exit code.
func kubectl(t *testing.T, env []string, stdin, ns string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), framework.WaitLimit)
	defer cancel()
	cmd := kubectlCmd(ctx, env, ns, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// mustKubectl fails the test unless kubectl succeeds.
func mustKubectl(t *testing.T, env []string, stdin, ns string, args ...string) string {
	t.Helper()
	out, errs, code := kubectl(t, env, stdin, ns, args...)
	if code != 0 {
		t.Fatalf("kubectl %v: exit %d: %s", args, code, errs)
	}
	return out
}

// restartingShellPod runs script with sh in the test image, restarted
// when it exits (restartPolicy Always).
func restartingShellPod(name, script string) *v1.Pod {
	p := testPod(name)
	p.Spec.Containers[0].Command = []string{"sh", "-c", script}
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	return p
}

// waitUntil waits, without polling the cluster, until the clock passes t.
func waitUntil(deadline time.Time) {
	if d := time.Until(deadline); d > 0 {
		time.Sleep(d)
	}
}

var timestamped = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z) (.*)$`)

func TestKubectlLogs(t *testing.T) {
	node(t)
	ns := namespace(t)
	createPod(t, ns, testPod("steady"))
	createPod(t, ns, restartingShellPod("chatty", `for i in 1 2 3 4 5; do echo early-$i; done
while [ ! -f /tmp/go ]; do sleep 0.2; done
echo late-1; echo late-err >&2
i=0; while [ ! -f /tmp/stop ]; do i=$((i+1)); echo tick-$i; sleep 0.3; done
echo stopping`))
	waitPod(t, ns, "chatty", "Running", running)
	framework.Eventually(t, "the first lines logged", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "chatty")
		return out == "early-1\nearly-2\nearly-3\nearly-4\nearly-5\n", out + errs
	})
	if out := mustKubectl(t, nil, "", ns, "logs", "chatty", "--tail=2"); out != "early-4\nearly-5\n" {
		t.Errorf("--tail=2: %q", out)
	}
	if out := mustKubectl(t, nil, "", ns, "logs", "chatty", "--limit-bytes=10"); out != "early-1\nea" {
		t.Errorf("--limit-bytes=10: %q", out)
	}
	out := mustKubectl(t, nil, "", ns, "logs", "chatty", "--timestamps")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var lastEarly time.Time
	for i, l := range lines {
		m := timestamped.FindStringSubmatch(l)
		if m == nil || m[3] != fmt.Sprintf("early-%d", i+1) {
			t.Fatalf("--timestamps line %d: %q", i, l)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		lastEarly = ts
	}

	// Later lines, well apart from the early ones, for --since and
	// --since-time.
	waitUntil(lastEarly.Add(12 * time.Second))
	mustKubectl(t, nil, "", ns, "exec", "chatty", "--", "touch", "/tmp/go")
	framework.Eventually(t, "late lines and ticks", func() (bool, string) {
		out, _, _ := kubectl(t, nil, "", ns, "logs", "chatty")
		return strings.Contains(out, "late-1\n") && strings.Contains(out, "late-err\n") && strings.Contains(out, "tick-2\n"), framework.Tail(out, 3)
	})
	out = mustKubectl(t, nil, "", ns, "logs", "chatty", "--since-time="+lastEarly.Add(time.Second).Format(time.RFC3339))
	if strings.Contains(out, "early-") || !strings.Contains(out, "late-1\n") || !strings.Contains(out, "late-err\n") {
		t.Errorf("--since-time: %q", framework.Tail(out, 5))
	}
	// Ticks keep coming every 0.3 s; the early lines are 12 s old.
	out = mustKubectl(t, nil, "", ns, "logs", "chatty", "--since=6s")
	if strings.Contains(out, "early-") || !strings.Contains(out, "tick-") {
		t.Errorf("--since=6s: %q", framework.Tail(out, 5))
	}

	// -f: lines written after it starts arrive, and it ends when the
	// container does.
	ctx, cancel := context.WithTimeout(context.Background(), framework.WaitLimit)
	defer cancel()
	follow := kubectlCmd(ctx, nil, ns, "logs", "-f", "--tail=1", "chatty")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var ticks []int
	for len(ticks) < 4 && sc.Scan() {
		var n int
		if _, err := fmt.Sscanf(sc.Text(), "tick-%d", &n); err != nil {
			t.Fatalf("followed line %q", sc.Text())
		}
		ticks = append(ticks, n)
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i] != ticks[i-1]+1 {
			t.Errorf("followed ticks not consecutive: %v", ticks)
		}
	}
	if len(ticks) < 4 {
		t.Fatalf("follow stopped early: %v (%v)", ticks, sc.Err())
	}
	mustKubectl(t, nil, "", ns, "exec", "chatty", "--", "touch", "/tmp/stop")
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if err := follow.Wait(); err != nil {
		t.Errorf("kubectl logs -f after the container stopped: %v", err)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "stopping" {
		t.Errorf("the follow did not end with the container's last line: %q", rest)
	}

	// --previous: the instance before a restart.
	createPod(t, ns, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "restarter"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Volumes:                       []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{
				Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command:      []string{"sh", "-c", `n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo attempt-$n; [ $n -ge 2 ] && exec sleep 3600; exit 1`},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
		},
	})
	waitPod(t, ns, "restarter", "restarted once and running", func(p *v1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	framework.Eventually(t, "the second attempt's log", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "restarter")
		return out == "attempt-2\n", out + errs
	})
	if out := mustKubectl(t, nil, "", ns, "logs", "restarter", "--previous"); out != "attempt-1\n" {
		t.Errorf("--previous: %q", out)
	}
	waitPod(t, ns, "steady", "Running", running)
	if _, errs, code := kubectl(t, nil, "", ns, "logs", "steady", "--previous"); code == 0 || !strings.Contains(errs, "previous terminated container") {
		t.Errorf("--previous without a restart: exit %d %q", code, errs)
	}
}

// spdy makes kubectl use SPDY toward the API server for exec, attach and
// port-forward instead of WebSockets.
var spdy = []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}

func TestKubectlExec(t *testing.T) {
	node(t)
	ns := namespace(t)
	createPod(t, ns, testPod("shell"))
	waitPod(t, ns, "shell", "Running", running)
	for name, env := range map[string][]string{"websocket": nil, "spdy": spdy} {
		t.Run(name, func(t *testing.T) {
			out, errs, code := kubectl(t, env, "", ns, "exec", "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
			if out != "out\n" || !strings.Contains(errs, "err\n") || code != 3 {
				t.Errorf("exec: stdout %q stderr %q exit %d; want out, err, 3", out, errs, code)
			}
			out = mustKubectl(t, env, "hello from stdin", ns, "exec", "-i", "shell", "--", "sh", "-c", "cat; echo; echo done")
			if out != "hello from stdin\ndone\n" {
				t.Errorf("exec -i: %q", out)
			}
			if _, _, code := kubectl(t, env, "", ns, "exec", "shell", "-c", "nope", "--", "true"); code == 0 {
				t.Error("exec in a container the pod does not have succeeded")
			}
		})
	}
	// A terminal: kubectl exec -it with a real pty, its size passed on.
	t.Run("tty", func(t *testing.T) {
		master, slave, err := framework.OpenPTY(40, 100)
		if err != nil {
			t.Fatal(err)
		}
		defer master.Close()
		ctx, cancel := context.WithTimeout(context.Background(), framework.WaitLimit)
		defer cancel()
		// kubectl sends the window size once the streams are up, and the
		// runtime applies it to the container's terminal asynchronously:
		// the command may start before it lands (busybox's stty then fails
		// on rows 0, printing nothing and exiting 0). The script waits,
		// boundedly, for a size to be set.
		script := `tty; i=0; while [ $i -lt 100 ]; do s=$(stty size 2>/dev/null); case "$s" in ""|"0 0") ;; *) break ;; esac; i=$((i+1)); sleep 0.1; done; echo "size $s"; exit 4`
		cmd := kubectlCmd(ctx, nil, ns, "exec", "-it", "shell", "--", "sh", "-c", script)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var out bytes.Buffer
		done := make(chan struct{})
		go func() { _, _ = io.Copy(&out, master); close(done) }()
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 4 {
			t.Errorf("exec -it exit: %v, want 4", err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			master.Close()
			<-done
		}
		got := strings.ReplaceAll(out.String(), "\r", "")
		if !strings.Contains(got, "/dev/pts/") || !strings.Contains(got, "size 40 100\n") {
			t.Errorf("exec -it output: %q", got)
		}
	})
}

func TestKubectlAttach(t *testing.T) {
	node(t)
	ns := namespace(t)
	for name, env := range map[string][]string{"websocket": nil, "spdy": spdy} {
		t.Run(name, func(t *testing.T) {
			p := restartingShellPod("reader-"+name, `while read l; do echo got-$l; done; echo bye`)
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].Stdin = true
			p.Spec.Containers[0].StdinOnce = true
			createPod(t, ns, p)
			waitPod(t, ns, p.Name, "Running", running)
			out, errs, code := kubectl(t, env, "hello\nworld\n", ns, "attach", "-i", p.Name)
			if code != 0 || !strings.Contains(out, "got-hello\ngot-world\nbye\n") {
				t.Errorf("attach -i: exit %d stdout %q stderr %q", code, out, errs)
			}
			// stdinOnce: the container saw the end of its input and ended.
			waitPod(t, ns, p.Name, "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
		})
	}
}

func TestKubectlPortForward(t *testing.T) {
	node(t)
	ns := namespace(t)
	createPod(t, ns, testPod("echo", "--tcp-port=9000"))
	waitPod(t, ns, "echo", "Running", running)
	for name, env := range map[string][]string{"websocket": nil, "spdy": spdy} {
		t.Run(name, func(t *testing.T) {
			port, stderr := startPortForward(t, env, ns, "echo", 9000)
			// 256 KiB of random lines, echoed back while still being sent.
			conn, err := net.Dial("tcp", "127.0.0.1:"+port)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var sent bytes.Buffer
			for i := 0; i < 2048; i++ {
				b := make([]byte, 64)
				_, _ = rand.Read(b)
				sent.WriteString(hex.EncodeToString(b) + "\n")
			}
			want := append([]byte(nil), sent.Bytes()...)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(conn, &sent)
			}()
			_ = conn.SetReadDeadline(time.Now().Add(framework.WaitLimit))
			got := make([]byte, len(want))
			if _, err := io.ReadFull(conn, got); err != nil {
				t.Fatalf("reading the echo: %v (stderr %s)", err, stderr())
			}
			wg.Wait()
			if !bytes.Equal(got, want) {
				t.Errorf("echoed bytes differ from the sent ones")
			}
		})
	}
}

var forwardingAny = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> \d+`)

// startPortForward runs kubectl port-forward to the pod's port until the
// test ends, and returns the local port once kubectl forwards, and what
// kubectl wrote to stderr so far (for messages).
func startPortForward(t *testing.T, env []string, ns, pod string, port int) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := kubectlCmd(ctx, env, ns, "port-forward", "pod/"+pod, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var errb bytes.Buffer
	cmd.Stderr = lockedWriter{&mu, &errb}
	stderr := func() string { mu.Lock(); defer mu.Unlock(); return errb.String() }
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	portc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwardingAny.FindStringSubmatch(sc.Text()); m != nil {
				portc <- m[1]
			}
		}
		close(portc)
	}()
	select {
	case p, ok := <-portc:
		if !ok {
			t.Fatalf("port-forward ended: %s", stderr())
		}
		return p, stderr
	case <-time.After(framework.WaitLimit):
		t.Fatalf("port-forward not ready: %s", stderr())
	}
	return "", stderr
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// portForwardEcho runs kubectl port-forward to the pod's port, sends msg
// over the forwarded connection and returns what comes back (as much as
// msg's length) before the deadline.
func portForwardEcho(t *testing.T, ns, pod string, port int, msg string) string {
	t.Helper()
	local, stderr := startPortForward(t, nil, ns, pod, port)
	conn, err := net.Dial("tcp", "127.0.0.1:"+local)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, msg); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(framework.WaitLimit))
	got := make([]byte, len(msg))
	n, err := io.ReadFull(conn, got)
	if err != nil {
		t.Errorf("reading the echo: %v (stderr %s)", err, stderr())
	}
	return string(got[:n])
}
