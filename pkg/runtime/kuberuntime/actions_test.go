package kuberuntime

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/runtime/backoff"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// render prints actions compactly so that each table row reads as a
// specification: "kill-pod sandbox(attempt=1) init[i1#0] start[a#1] kill[a:SpecChanged] wait[a:CrashLoopBackOff]".
func render(a PodActions) string {
	var parts []string
	if a.KillPod {
		parts = append(parts, "kill-pod")
	}
	if a.InitFailed {
		parts = append(parts, "init-failed")
	}
	if a.CreateSandbox {
		parts = append(parts, fmt.Sprintf("sandbox(attempt=%d)", a.Attempt))
	}
	list := func(tag string, cs []ContainerToStart) {
		if len(cs) == 0 {
			return
		}
		var s []string
		for _, c := range cs {
			s = append(s, fmt.Sprintf("%s#%d", c.Name, c.RestartCount))
		}
		parts = append(parts, tag+"["+strings.Join(s, ",")+"]")
	}
	list("ephemeral", a.EphemeralContainersToStart)
	list("init", a.InitContainersToStart)
	list("start", a.ContainersToStart)
	if len(a.ContainersToKill) > 0 {
		var s []string
		for _, k := range a.ContainersToKill {
			s = append(s, k.Name+":"+k.Reason)
		}
		parts = append(parts, "kill["+strings.Join(s, ",")+"]")
	}
	if len(a.Deferred) > 0 {
		var s []string
		for _, d := range a.Deferred {
			s = append(s, d.Name+":"+d.Reason)
		}
		parts = append(parts, "wait["+strings.Join(s, ",")+"]")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

type podOpt func(*v1.Pod)

// withPolicy sets the named container's (app or init) own restartPolicy.
func withPolicy(name string, policy v1.ContainerRestartPolicy) podOpt {
	return func(p *v1.Pod) {
		for _, list := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				if list[i].Name == name {
					list[i].RestartPolicy = &policy
				}
			}
		}
	}
}

// withRestartOn gives the named app container a Restart rule for exit codes In codes.
func withRestartOn(name string, codes ...int32) podOpt {
	return func(p *v1.Pod) {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == name {
				p.Spec.Containers[i].RestartPolicyRules = append(p.Spec.Containers[i].RestartPolicyRules, v1.ContainerRestartRule{
					Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}})
			}
		}
	}
}

// withProbes gives the named containers (app or init) a liveness and a
// startup probe.
func withProbes(names ...string) podOpt {
	return func(p *v1.Pod) {
		for _, n := range names {
			c := findContainer(p, n)
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			c.StartupProbe = c.LivenessProbe.DeepCopy()
		}
	}
}

// fakeLiveness reports the probes in failed (container name -> "liveness"
// or "startup") as failed on the running instances of status only, as the
// prober keys results by container instance.
func fakeLiveness(status *container.PodStatus, failed map[string]string) LivenessFunc {
	return func(uid types.UID, name, id string) (bool, string) {
		kind, ok := failed[name]
		if !ok {
			return false, ""
		}
		for _, c := range status.Containers {
			if c.ID == id && c.State == container.StateRunning {
				return true, fmt.Sprintf("Container %s failed %s probe", name, kind)
			}
		}
		return false, ""
	}
}

func mkPod(policy v1.RestartPolicy, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	p.Spec.RestartPolicy = policy
	p.Spec.Containers = []v1.Container{{Name: "app", Image: "img:1"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withInit(names ...string) podOpt {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "img:1"})
		}
	}
}

func withSidecar(name string) podOpt {
	always := v1.ContainerRestartPolicyAlways
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name, Image: "img:1", RestartPolicy: &always})
	}
}

func withApps(names ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers = nil
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img:1"})
		}
	}
}

// observed builds a PodStatus from a terse description of instances:
// "name=running", "name=exited:1", "name=created"; "@old" suffix puts it in
// an old sandbox; "#N" sets the restart count; "!hash" gives a stale hash.
type world struct {
	sandbox string // "", "ready", "notready", "ready+hostnet", "ready,ready"
	ctrs    []string
}

func (w world) status(pod *v1.Pod) *container.PodStatus {
	st := &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	for i, s := range strings.Split(w.sandbox, ",") {
		if s == "" {
			continue
		}
		sb := container.SandboxStatus{ID: fmt.Sprintf("sb%d", i), Attempt: uint32(2 - i), CreatedAt: t0.Add(-time.Duration(i+1) * time.Hour), IPs: []string{"10.0.0.2"}}
		sb.State = container.SandboxReady
		if strings.HasPrefix(s, "notready") {
			sb.State = container.SandboxNotReady
		}
		sb.HostNetwork = strings.HasSuffix(s, "+hostnet")
		st.Sandboxes = append(st.Sandboxes, sb)
	}
	specs := map[string]*v1.Container{}
	for i := range pod.Spec.InitContainers {
		specs[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
	}
	for i := range pod.Spec.Containers {
		specs[pod.Spec.Containers[i].Name] = &pod.Spec.Containers[i]
	}
	for i, d := range w.ctrs {
		c := container.Status{ID: fmt.Sprintf("c%d", i), SandboxID: "sb0", CreatedAt: t0.Add(-time.Hour + time.Duration(i)*time.Minute)}
		if strings.Contains(d, "@old") {
			c.SandboxID = "sb1"
			d = strings.Replace(d, "@old", "", 1)
		}
		stale := strings.Contains(d, "!hash")
		d = strings.Replace(d, "!hash", "", 1)
		if j := strings.Index(d, "#"); j >= 0 {
			fmt.Sscanf(d[j+1:], "%d", &c.RestartCount)
			d = d[:j]
		}
		name, state, _ := strings.Cut(d, "=")
		c.Name = name
		if spec := specs[name]; spec != nil && !stale {
			c.Hash = HashContainer(spec)
		}
		switch {
		case state == "running":
			c.State = container.StateRunning
			c.StartedAt = c.CreatedAt
		case state == "created":
			c.State = container.StateCreated
		case strings.HasPrefix(state, "exited"):
			c.State = container.StateExited
			fmt.Sscanf(strings.TrimPrefix(state, "exited:"), "%d", &c.ExitCode)
			c.StartedAt = c.CreatedAt
			c.FinishedAt = t0.Add(-30 * time.Second) // failed 30s ago
		}
		st.Containers = append(st.Containers, c)
	}
	return st
}

func TestComputePodActions(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	cases := []struct {
		name string
		pod  *v1.Pod
		w    world
		// backoff: container name -> current delay (the container was last
		// restarted just before it failed 30s ago).
		backoff map[string]time.Duration
		// probeFailed: container name -> "liveness" or "startup", the probe
		// that failed on its running instance.
		probeFailed map[string]string
		want        string
	}{
		// First start.
		{name: "first start: sandbox and app", pod: mkPod(always), want: "sandbox(attempt=0) start[app#0]"},
		{name: "first start with init: only the first init", pod: mkPod(always, withInit("i1", "i2")), want: "sandbox(attempt=0) init[i1#0]"},
		{name: "steady state", pod: mkPod(always), w: world{"ready", []string{"app=running"}}, want: "nothing"},
		{name: "sandbox ready, no container yet", pod: mkPod(always, withApps("a", "b")), w: world{"ready", nil}, want: "start[a#0,b#0]"},

		// Init sequencing.
		{name: "init 1 running: wait", pod: mkPod(always, withInit("i1", "i2")), w: world{"ready", []string{"i1=running"}}, want: "nothing"},
		{name: "init 1 done: start init 2", pod: mkPod(always, withInit("i1", "i2")), w: world{"ready", []string{"i1=exited:0"}}, want: "init[i2#0]"},
		{name: "all init done: start apps", pod: mkPod(always, withInit("i1", "i2")), w: world{"ready", []string{"i1=exited:0", "i2=exited:0"}}, want: "start[app#0]"},
		{name: "init GC'd after app started: nothing re-runs", pod: mkPod(always, withInit("i1")), w: world{"ready", []string{"app=running"}}, want: "nothing"},
		{name: "init from old sandbox does not count", pod: mkPod(always, withInit("i1")), w: world{"ready,notready", []string{"i1=exited:0@old"}}, want: "init[i1#1]"},

		// Failed init container per restart policy.
		{name: "failed init, Always: restart it", pod: mkPod(always, withInit("i1", "i2")), w: world{"ready", []string{"i1=exited:1"}}, want: "init[i1#1]"},
		{name: "failed init, OnFailure: restart it", pod: mkPod(onFailure, withInit("i1")), w: world{"ready", []string{"i1=exited:1#3"}}, want: "init[i1#4]"},
		{name: "failed init, Never: pod fails", pod: mkPod(never, withInit("i1", "i2")), w: world{"ready", []string{"i1=exited:1"}}, want: "kill-pod init-failed"},
		{name: "failed init in back-off", pod: mkPod(always, withInit("i1")), w: world{"ready", []string{"i1=exited:1"}}, backoff: map[string]time.Duration{"i1": 40 * time.Second}, want: "wait[i1:CrashLoopBackOff]"},

		// Sidecars (init containers with restartPolicy Always).
		{name: "sidecar running lets next init start", pod: mkPod(always, withSidecar("proxy"), withInit("i1")), w: world{"ready", []string{"proxy=running"}}, want: "init[i1#0]"},
		{name: "sidecar exited after init: restart", pod: mkPod(always, withSidecar("proxy")), w: world{"ready", []string{"proxy=exited:0", "app=running"}}, want: "init[proxy#1]"},
		{name: "pod done: sidecars stopped", pod: mkPod(onFailure, withSidecar("proxy")), w: world{"ready", []string{"proxy=running", "app=exited:0"}}, want: "kill-pod"},

		// App container exits, per restart policy.
		{name: "Always, exit 0: restart", pod: mkPod(always), w: world{"ready", []string{"app=exited:0"}}, want: "start[app#1]"},
		{name: "Always, exit 1: restart", pod: mkPod(always), w: world{"ready", []string{"app=exited:1#4"}}, want: "start[app#5]"},
		{name: "OnFailure, exit 0: done", pod: mkPod(onFailure), w: world{"ready", []string{"app=exited:0"}}, want: "kill-pod"},
		{name: "OnFailure, exit 1: restart", pod: mkPod(onFailure), w: world{"ready", []string{"app=exited:1"}}, want: "start[app#1]"},
		{name: "Never, exit 1: done", pod: mkPod(never), w: world{"ready", []string{"app=exited:1"}}, want: "kill-pod"},
		{name: "Never, one of two exited: keep other", pod: mkPod(never, withApps("a", "b")), w: world{"ready", []string{"a=exited:0", "b=running"}}, want: "nothing"},
		{name: "crash loop: within back-off", pod: mkPod(always), w: world{"ready", []string{"app=exited:1#2"}}, backoff: map[string]time.Duration{"app": 40 * time.Second}, want: "wait[app:CrashLoopBackOff]"},
		{name: "crash loop: back-off elapsed", pod: mkPod(always), w: world{"ready", []string{"app=exited:1#2"}}, backoff: map[string]time.Duration{"app": 20 * time.Second}, want: "start[app#3]"},
		{name: "created but never started: replace", pod: mkPod(always), w: world{"ready", []string{"app=created"}}, want: "start[app#1] kill[app:UnknownState]"},

		// A container's own restartPolicy and rules (ContainerRestartRules).
		{name: "pod Never, container Always: restart", pod: mkPod(never, withPolicy("app", v1.ContainerRestartPolicyAlways)), w: world{"ready", []string{"app=exited:1"}}, want: "start[app#1]"},
		{name: "pod Always, container Never: done", pod: mkPod(always, withPolicy("app", v1.ContainerRestartPolicyNever)), w: world{"ready", []string{"app=exited:1"}}, want: "kill-pod"},
		{name: "rule In 42 matches: restart", pod: mkPod(never, withPolicy("app", v1.ContainerRestartPolicyNever), withRestartOn("app", 42)), w: world{"ready", []string{"app=exited:42"}}, want: "start[app#1]"},
		{name: "rule In 42 misses: done", pod: mkPod(never, withPolicy("app", v1.ContainerRestartPolicyNever), withRestartOn("app", 42)), w: world{"ready", []string{"app=exited:1"}}, want: "kill-pod"},
		{name: "pod Never, init OnFailure failed: restart it", pod: mkPod(never, withInit("i1"), withPolicy("i1", v1.ContainerRestartPolicyOnFailure)), w: world{"ready", []string{"i1=exited:1"}}, want: "init[i1#1]"},
		{name: "pod Always, init Never failed: pod fails", pod: mkPod(always, withInit("i1"), withPolicy("i1", v1.ContainerRestartPolicyNever)), w: world{"ready", []string{"i1=exited:1"}}, want: "kill-pod init-failed"},
		{name: "liveness failed, pod Always, container Never: kill only", pod: mkPod(always, withProbes("app"), withPolicy("app", v1.ContainerRestartPolicyNever)), w: world{"ready", []string{"app=running"}}, probeFailed: map[string]string{"app": "liveness"}, want: "kill[app:LivenessProbe]"},
		{name: "sandbox died, container OnFailure: succeeded app stays done", pod: mkPod(always, withApps("a", "b"), withPolicy("a", v1.ContainerRestartPolicyOnFailure)), w: world{"notready", []string{"a=exited:0", "b=exited:2"}}, want: "sandbox(attempt=3) start[b#1]"},

		// Sandbox died or changed: everything again.
		{name: "sandbox died: recreate all", pod: mkPod(always, withApps("a", "b")), w: world{"notready", []string{"a=exited:137", "b=exited:137#1"}}, want: "sandbox(attempt=3) start[a#1,b#2]"},
		{name: "sandbox died with init: restart from first init", pod: mkPod(always, withInit("i1")), w: world{"notready", []string{"i1=exited:0", "app=running"}}, want: "kill-pod sandbox(attempt=3) init[i1#1]"},
		{name: "sandbox died, OnFailure: succeeded app stays done", pod: mkPod(onFailure, withApps("a", "b")), w: world{"notready", []string{"a=exited:0", "b=exited:2"}}, want: "sandbox(attempt=3) start[b#1]"},
		{name: "sandbox died, Never: do not recreate", pod: mkPod(never), w: world{"notready", []string{"app=exited:137"}}, want: "nothing"},
		{name: "host network changed", pod: mkPod(always, func(p *v1.Pod) { p.Spec.HostNetwork = true }), w: world{"ready", []string{"app=running"}}, want: "kill-pod sandbox(attempt=3) start[app#1]"},
		{name: "two ready sandboxes: start over", pod: mkPod(always), w: world{"ready,ready", []string{"app=running"}}, want: "kill-pod sandbox(attempt=3) start[app#1]"},

		// Spec changes.
		{name: "spec hash changed: kill and restart", pod: mkPod(always), w: world{"ready", []string{"app=running!hash"}}, want: "start[app#1] kill[app:SpecChanged]"},
		{name: "container not in spec: kill", pod: mkPod(always), w: world{"ready", []string{"app=running", "gone=running"}}, want: "kill[gone:NotInSpec]"},

		// Terminal pods.
		{name: "terminal pod with leftovers: kill", pod: mkPod(always, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), w: world{"ready", []string{"app=running"}}, want: "kill-pod"},
		{name: "terminal pod, all gone: nothing", pod: mkPod(always, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }), w: world{"notready", []string{"app=exited:0"}}, want: "nothing"},
		{name: "deleted pod never starts", pod: mkPod(always, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }), want: "nothing"},

		// Liveness and startup probes.
		{name: "liveness failed, Always: kill and restart at once", pod: mkPod(always, withProbes("app")), w: world{"ready", []string{"app=running#2"}}, probeFailed: map[string]string{"app": "liveness"}, want: "start[app#3] kill[app:LivenessProbe]"},
		{name: "liveness failed, OnFailure: kill and restart", pod: mkPod(onFailure, withProbes("app")), w: world{"ready", []string{"app=running"}}, probeFailed: map[string]string{"app": "liveness"}, want: "start[app#1] kill[app:LivenessProbe]"},
		{name: "liveness failed, Never: kill only", pod: mkPod(never, withProbes("app")), w: world{"ready", []string{"app=running"}}, probeFailed: map[string]string{"app": "liveness"}, want: "kill[app:LivenessProbe]"},
		{name: "startup failed: kill and restart", pod: mkPod(always, withProbes("app")), w: world{"ready", []string{"app=running"}}, probeFailed: map[string]string{"app": "startup"}, want: "start[app#1] kill[app:StartupProbe]"},
		{name: "liveness failed, not restarted within a crash back-off", pod: mkPod(always, withProbes("app")), w: world{"ready", []string{"app=exited:1", "app=running#1"}}, backoff: map[string]time.Duration{"app": 40 * time.Second}, probeFailed: map[string]string{"app": "liveness"}, want: "start[app#2] kill[app:LivenessProbe]"},
		{name: "liveness failed on one of two", pod: mkPod(always, withApps("a", "b"), withProbes("a", "b")), w: world{"ready", []string{"a=running", "b=running"}}, probeFailed: map[string]string{"b": "liveness"}, want: "start[b#1] kill[b:LivenessProbe]"},
		{name: "liveness hook ignored without probes in the spec", pod: mkPod(always), w: world{"ready", []string{"app=running"}}, probeFailed: map[string]string{"app": "liveness"}, want: "nothing"},
		{name: "exited container: liveness result irrelevant", pod: mkPod(never, withProbes("app")), w: world{"ready", []string{"app=exited:137"}}, probeFailed: map[string]string{"app": "liveness"}, want: "kill-pod"},
		{name: "sidecar liveness failed: restart it", pod: mkPod(never, withSidecar("proxy"), withProbes("proxy")), w: world{"ready", []string{"proxy=running", "app=running"}}, probeFailed: map[string]string{"proxy": "liveness"}, want: "init[proxy#1] kill[proxy:LivenessProbe]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0.Add(-31 * time.Second))
			bo := backoff.New(backoff.CrashLoop, clk)
			for name, d := range tc.backoff {
				c := findContainer(tc.pod, name)
				for bo.Get(BackoffKey(tc.pod, c)) != d {
					bo.Next(BackoffKey(tc.pod, c), t0.Add(-31*time.Second))
				}
			}
			clk.SetTime(t0) // the back-off reads the decision's now
			status := tc.w.status(tc.pod)
			got := render(ComputePodActions(tc.pod, status, bo, fakeLiveness(status, tc.probeFailed), t0))
			if got != tc.want {
				t.Errorf("\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func TestCrashLoopMessage(t *testing.T) {
	pod := mkPod(v1.RestartPolicyAlways)
	clk := clocktesting.NewFakeClock(t0)
	bo := backoff.New(backoff.CrashLoop, clk)
	bo.Next(BackoffKey(pod, &pod.Spec.Containers[0]), t0)
	bo.Next(BackoffKey(pod, &pod.Spec.Containers[0]), t0)
	clk.SetTime(t0.Add(5 * time.Second))
	st := world{"ready", []string{"app=exited:1"}}.status(pod)
	st.Containers[0].FinishedAt = t0
	a := ComputePodActions(pod, st, bo, nil, t0.Add(5*time.Second))
	want := "back-off 20s restarting failed container=app pod=web_default(uid-1)"
	if len(a.Deferred) != 1 || a.Deferred[0].Message != want {
		t.Fatalf("got %+v, want message %q", a.Deferred, want)
	}
}

func TestProbeKillMessageAndGrace(t *testing.T) {
	grace := int64(7)
	cases := []struct {
		name      string
		policy    v1.RestartPolicy
		kind      string
		wantMsg   string
		wantGrace *int64
	}{
		{"liveness restarts", v1.RestartPolicyAlways, "liveness", "Container app failed liveness probe, will be restarted", &grace},
		{"liveness, Never", v1.RestartPolicyNever, "liveness", "Container app failed liveness probe", &grace},
		{"startup uses the startup probe's grace (unset: the pod's)", v1.RestartPolicyAlways, "startup", "Container app failed startup probe, will be restarted", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := mkPod(tc.policy, withProbes("app"))
			pod.Spec.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = &grace
			st := world{"ready", []string{"app=running"}}.status(pod)
			a := ComputePodActions(pod, st, nil, fakeLiveness(st, map[string]string{"app": tc.kind}), t0)
			if len(a.ContainersToKill) != 1 {
				t.Fatalf("got %s", render(a))
			}
			k := a.ContainersToKill[0]
			if k.Message != tc.wantMsg {
				t.Errorf("message %q, want %q", k.Message, tc.wantMsg)
			}
			if (k.GracePeriod == nil) != (tc.wantGrace == nil) || (k.GracePeriod != nil && *k.GracePeriod != *tc.wantGrace) {
				t.Errorf("grace period %v, want %v", k.GracePeriod, tc.wantGrace)
			}
		})
	}
}

func withEphemeral(name string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "img:1"}})
	}
}

// TestSidecarStartupAndEphemeral covers what the rest of the pod spec adds
// to the decision: init containers after a sidecar wait for its startup
// probe; ephemeral containers start once and never again.
func TestSidecarStartupAndEphemeral(t *testing.T) {
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	withStartup := func(name string) podOpt {
		return func(p *v1.Pod) {
			findContainer(p, name).StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}
	}
	cases := []struct {
		name    string
		pod     *v1.Pod
		w       world
		started map[string]bool
		want    string
	}{
		{name: "sidecar without startup probe: next init at once", pod: mkPod(always, withSidecar("proxy"), withInit("i1")), w: world{"ready", []string{"proxy=running"}}, want: "init[i1#0]"},
		{name: "sidecar startup probe pending: wait", pod: mkPod(always, withSidecar("proxy"), withStartup("proxy"), withInit("i1")), w: world{"ready", []string{"proxy=running"}}, want: "nothing"},
		{name: "sidecar started: next init", pod: mkPod(always, withSidecar("proxy"), withStartup("proxy"), withInit("i1")), w: world{"ready", []string{"proxy=running"}}, started: map[string]bool{"proxy": true}, want: "init[i1#0]"},
		{name: "sidecar startup pending blocks apps too", pod: mkPod(always, withSidecar("proxy"), withStartup("proxy")), w: world{"ready", []string{"proxy=running"}}, want: "nothing"},
		{name: "restarted sidecar after init does not hold apps", pod: mkPod(always, withSidecar("proxy"), withStartup("proxy"), withApps("a", "b")), w: world{"ready", []string{"proxy=running#1", "a=running"}}, want: "start[b#0]"},
		{name: "ephemeral starts in a running pod", pod: mkPod(always, withEphemeral("debug")), w: world{"ready", []string{"app=running"}}, want: "ephemeral[debug#0]"},
		{name: "ephemeral starts during init", pod: mkPod(always, withInit("i1"), withEphemeral("debug")), w: world{"ready", []string{"i1=running"}}, want: "ephemeral[debug#0]"},
		{name: "ephemeral never restarted", pod: mkPod(always, withEphemeral("debug")), w: world{"ready", []string{"app=running", "debug=exited:1"}}, want: "nothing"},
		{name: "running ephemeral is not killed as not in spec", pod: mkPod(always, withEphemeral("debug")), w: world{"ready", []string{"app=running", "debug=running"}}, want: "nothing"},
		{name: "no ephemeral start while the sandbox is created", pod: mkPod(always, withEphemeral("debug")), want: "sandbox(attempt=0) start[app#0]"},
		{name: "pod done: ephemeral not started", pod: mkPod(never, withEphemeral("debug")), w: world{"ready", []string{"app=exited:0"}}, want: "kill-pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.w.status(tc.pod)
			started := func(_ types.UID, name, id string) bool {
				for _, c := range status.Containers {
					if c.ID == id && c.State == container.StateRunning {
						return tc.started[name]
					}
				}
				return false
			}
			got := render(ComputePodActionsWith(tc.pod, status, nil, Probes{Started: started}, t0))
			if got != tc.want {
				t.Errorf("\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}
