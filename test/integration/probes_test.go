package integration

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/test/framework"
)

// Probes as a user sees them: readiness holds a running pod not Ready, a
// failing liveness probe restarts the container (or, under restartPolicy
// Never, ends it with the probe's grace period), and a startup probe holds
// readiness and liveness back until it succeeds.

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func runningNotReady(name string) func(p *v1.Pod) bool {
	return func(p *v1.Pod) bool {
		c := containerStatus(p, name)
		return p.Status.Phase == v1.PodRunning && c != nil && c.State.Running != nil && !c.Ready && !podReady(p)
	}
}

// eventLogged reports whether the kubelet logged an event with reason and a
// message containing msg. The message follows the reason, on the same line
// or, when it has a newline (command output), on the next ones.
func eventLogged(log, reason, msg string) bool {
	key := `reason="` + reason + `"`
	for i := strings.Index(log, key); i >= 0; {
		rest := log[i+len(key):]
		if len(rest) > 600 {
			rest = rest[:600]
		}
		if strings.Contains(rest, msg) {
			return true
		}
		j := strings.Index(log[i+len(key):], key)
		if j < 0 {
			break
		}
		i += len(key) + j
	}
	return false
}

func TestReadinessProbeHoldsPodNotReady(t *testing.T) {
	n := startNode(t)
	n.writeManifest("unready.yaml", manifest("unready", `  containers:
  - name: web
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /tmp/unready; exec /testserver --http-port=8080"]
    readinessProbe:
      httpGet:
        path: /readyz
        port: 8080
      periodSeconds: 1
`))
	p := n.waitPod("unready", "Running but not Ready", runningNotReady("web"))
	framework.Eventually(t, "the readiness failure as an Unhealthy event", func() (bool, string) {
		return eventLogged(n.Log(), "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"), "not in the log yet"
	})
	// It stays so across several probe periods.
	for i := 0; i < 4; i++ {
		time.Sleep(time.Second)
		cur, ok := n.pod("unready")
		if !ok || !runningNotReady("web")(cur) {
			t.Fatalf("not Running-and-unready any more: %v", describeOrMissing(cur, ok))
		}
	}
	// The application becomes ready: so does the pod, without a restart.
	id := strings.TrimPrefix(containerStatus(p, "web").ContainerID, "containerd://")
	if _, _, err := runtimeSvc.ExecSync(t.Context(), id, []string{"rm", "/tmp/unready"}, 10*time.Second); err != nil {
		t.Fatalf("removing /tmp/unready in the container: %v", err)
	}
	cur := n.waitPod("unready", "Ready once /readyz answers 200", isRunningReady)
	if c := containerStatus(cur, "web"); !c.Ready || c.RestartCount != 0 || c.Started == nil || !*c.Started {
		t.Errorf("container status: %s started=%v", describe(cur), c.Started)
	}
}

func describeOrMissing(p *v1.Pod, ok bool) string {
	if !ok {
		return "pod not in /pods"
	}
	return describe(p)
}

func TestLivenessProbeFailureRestartsContainer(t *testing.T) {
	n := startNode(t)
	// The HTTP pod's startup probe holds its liveness probe back until the
	// server listens, and both liveness probes allow a slow answer (a
	// timeout fails a probe with another message than the ones asserted
	// below). Without them, on a loaded machine a server slow to listen
	// can fail the liveness probe with "connection refused" at each start,
	// and the restarts the test waits for never show the 500 it asserts
	// (a CI run on containerd 1.6 failed that way).
	n.writeManifest("exec-live.yaml", manifest("exec-live", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    livenessProbe:
      exec:
        command: ["cat", "/tmp/nonexistent"]
      periodSeconds: 1
      timeoutSeconds: 10
      failureThreshold: 2
`))
	n.writeManifest("http-live.yaml", manifest("http-live", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /tmp/unhealthy; exec /testserver --http-port=8080"]
    startupProbe:
      httpGet:
        path: /status/200
        port: 8080
      periodSeconds: 1
      failureThreshold: 60
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 1
      timeoutSeconds: 5
      failureThreshold: 1
`))
	for _, name := range []string{"exec-live", "http-live"} {
		p := n.waitPod(name, "restarted twice by its liveness probe", func(p *v1.Pod) bool {
			c := containerStatus(p, "main")
			return c != nil && c.RestartCount >= 2
		})
		c := containerStatus(p, "main")
		if c.LastTerminationState.Terminated == nil {
			t.Errorf("%s: no last termination state: %s", name, describe(p))
		}
		// Restarted at once, not after a crash back-off.
		if c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			t.Errorf("%s: a liveness restart went into CrashLoopBackOff: %s", name, describe(p))
		}
	}
	log := n.Log()
	for _, want := range []struct{ reason, msg string }{
		{"Unhealthy", "Liveness probe failed: cat: "},
		{"Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500"},
		{"Killing", "Container main failed liveness probe, will be restarted"},
	} {
		if !eventLogged(log, want.reason, want.msg) {
			t.Errorf("no %s event with %q in the kubelet log", want.reason, want.msg)
		}
	}
}

func TestLivenessFailureUnderNeverUsesTheProbeGracePeriod(t *testing.T) {
	n := startNode(t)
	// The container ignores SIGTERM; the pod's grace period is a minute,
	// the probe's two seconds. The startup probe holds the liveness probe
	// back until the server listens: a liveness failure before that
	// (connection refused) killed the container before it ignored SIGTERM,
	// and it exited 2 instead of being SIGKILLed (seen on containerd 1.6).
	n.writeManifest("never.yaml", manifest("never", `  restartPolicy: Never
  terminationGracePeriodSeconds: 60
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "touch /tmp/unhealthy; exec /testserver --http-port=8080 --ignore-term"]
    startupProbe:
      httpGet:
        path: /status/200
        port: 8080
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      httpGet:
        path: /healthz
        port: 8080
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 2
`))
	p := n.waitPod("never", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	c := containerStatus(p, "main")
	if c.RestartCount != 0 || c.State.Terminated == nil || c.State.Terminated.ExitCode != 137 {
		t.Fatalf("container: %s", describe(p))
	}
	if ran := c.State.Terminated.FinishedAt.Sub(c.State.Terminated.StartedAt.Time); ran > 30*time.Second {
		t.Errorf("the container ran %v: killed with the pod's 60s grace period, not the probe's 2s", ran)
	}
	if !eventLogged(n.Log(), "Killing", "Container main failed liveness probe") {
		t.Errorf("no Killing event for the liveness failure")
	}
}

func TestStartupProbeDelaysReadinessAndLiveness(t *testing.T) {
	n := startNode(t)
	// Started after 5s. The liveness probe would fail at once before that:
	// it must wait for the startup probe. Its timeout is generous: an exec
	// slower than the default 1s on a loaded machine is a failure, and a
	// restart, that says nothing about the startup probe.
	n.writeManifest("slow.yaml", manifest("slow", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "(sleep 5; touch /tmp/started) & exec /testserver --http-port=8080"]
    startupProbe:
      exec:
        command: ["test", "-f", "/tmp/started"]
      periodSeconds: 1
      failureThreshold: 60
    livenessProbe:
      exec:
        command: ["test", "-f", "/tmp/started"]
      periodSeconds: 1
      timeoutSeconds: 10
      failureThreshold: 1
    readinessProbe:
      httpGet:
        path: /readyz
        port: 8080
      periodSeconds: 1
`))
	sawNotStarted := false
	p := n.waitPod("slow", "Running and Ready", func(p *v1.Pod) bool {
		if c := containerStatus(p, "main"); c != nil && c.State.Running != nil && c.Started != nil && !*c.Started {
			sawNotStarted = true
			if c.Ready {
				t.Errorf("ready before started: %s", describe(p))
			}
		}
		return isRunningReady(p)
	})
	if !sawNotStarted {
		t.Errorf("never saw the container running but not started")
	}
	c := containerStatus(p, "main")
	if c.RestartCount != 0 {
		t.Errorf("restarted %d times: liveness ran before the startup probe succeeded", c.RestartCount)
	}
	var readyAt time.Time
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.ContainersReady {
			readyAt = cond.LastTransitionTime.Time
		}
	}
	if d := readyAt.Sub(c.State.Running.StartedAt.Time); d < 4*time.Second {
		t.Errorf("ready %v after start; the startup probe should hold it back about 5s", d)
	}
	if eventLogged(n.Log(), "Killing", "failed liveness probe") {
		t.Errorf("killed for liveness during startup")
	}
}
