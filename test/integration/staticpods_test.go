package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/test/framework"
)

const webSpec = `  containers:
  - name: web
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    ports:
    - containerPort: 8080
`

func TestStaticPodRuns(t *testing.T) {
	n := startNode(t)
	n.writeManifest("web.yaml", manifest("web", webSpec))
	p := n.waitPod("web", "Running and Ready", isRunningReady)

	// The runtime agrees: a ready sandbox and a running container.
	sbs, cs := runtimePod(t, string(p.UID))
	if len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("runtime sandboxes for the pod: %+v", sbs)
	}
	if len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING || cs[0].Metadata.Name != "web" {
		t.Fatalf("runtime containers for the pod: %+v", cs)
	}
	if want := "containerd://" + cs[0].Id; p.Status.ContainerStatuses[0].ContainerID != want {
		t.Errorf("containerID = %q, want %q", p.Status.ContainerStatuses[0].ContainerID, want)
	}
	// It serves on its pod IP.
	if p.Status.PodIP == "" {
		t.Fatalf("no pod IP: %s", describe(p))
	}
	framework.Eventually(t, "the pod answers on its IP", func() (bool, string) {
		code, body := framework.HTTPGet(fmt.Sprintf("http://%s:8080/healthz", p.Status.PodIP))
		return code == 200 && body == "ok", fmt.Sprintf("%d %s", code, body)
	})
	// Its log is where upstream puts it.
	logFile := filepath.Join(n.logsDir, fmt.Sprintf("default_web-%s_%s", nodeName, p.UID), "web", "0.log")
	framework.Eventually(t, "the container log has the request", func() (bool, string) {
		b, err := os.ReadFile(logFile)
		return err == nil && strings.Contains(string(b), "/healthz"), fmt.Sprintf("%v %q", err, b)
	})
	// /runningpods on the kubelet API shows it too.
	code, body := n.api(t, "GET", "/runningpods/")
	if code != 200 || !strings.Contains(body, string(p.UID)) {
		t.Errorf("/runningpods: %d %s", code, body)
	}
	// Static pod identity as upstream: name suffix, config annotations.
	if p.Annotations["kubernetes.io/config.source"] != "file" || p.Annotations["kubernetes.io/config.hash"] != string(p.UID) {
		t.Errorf("config annotations: %v", p.Annotations)
	}
}

func TestFailingContainerBacksOffLonger(t *testing.T) {
	n := startNode(t)
	n.writeManifest("crash.yaml", manifest("crash", `  containers:
  - name: crash
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "echo crashing; exit 1"]
`))
	// Record when each attempt started, from the runtime's own timestamps.
	sawBackOff := false
	p := n.waitPod("crash", "three restarts", func(p *v1.Pod) bool {
		c := containerStatus(p, "crash")
		if c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff" {
			sawBackOff = true
		}
		return c != nil && c.RestartCount >= 3
	})
	if !sawBackOff {
		t.Errorf("never reported CrashLoopBackOff while backing off")
	}
	if c := containerStatus(p, "crash"); c.LastTerminationState.Terminated == nil || c.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("lastState does not carry exit code 1: %+v", c.LastTerminationState)
	}
	sbs, cs := runtimePod(t, string(p.UID))
	// The crash loop backs off inside the pod's one sandbox (issue 7's
	// "sandbox re-created instead of backing off" flake would show here as
	// a second sandbox or a sandbox attempt above 0).
	for _, sb := range sbs {
		if len(sbs) != 1 || sb.Metadata.Attempt != 0 {
			t.Errorf("the pod sandbox was re-created while its container crash-looped: %d sandboxes, this one attempt %d, state %v",
				len(sbs), sb.Metadata.Attempt, sb.State)
		}
	}
	starts := map[uint32]time.Time{}
	finishes := map[uint32]time.Time{}
	for _, c := range cs {
		st, err := runtimeSvc.ContainerStatus(t.Context(), c.Id, false)
		if err != nil {
			t.Fatal(err)
		}
		starts[c.Metadata.Attempt] = time.Unix(0, st.Status.StartedAt)
		finishes[c.Metadata.Attempt] = time.Unix(0, st.Status.FinishedAt)
	}
	// The back-off before attempt 3 must be longer than before attempt 2
	// (10s then 20s upstream). Dead instances beyond the newest are garbage
	// collected, so compare the gaps that are still observable.
	gap := func(a uint32) (time.Duration, bool) {
		s, ok1 := starts[a]
		f, ok2 := finishes[a-1]
		return s.Sub(f), ok1 && ok2
	}
	g3, ok3 := gap(3)
	g2, ok2 := gap(2)
	if !ok3 {
		t.Fatalf("attempts 2 and 3 not both in the runtime: attempts %v", keys(starts))
	}
	if ok2 && !(g3 > g2) {
		t.Errorf("back-off did not grow: before attempt 2 %v, before attempt 3 %v", g2, g3)
	}
	if g3 < 15*time.Second {
		t.Errorf("back-off before attempt 3 was %v; crash loop back-off doubles from 10s", g3)
	}
}

func keys(m map[uint32]time.Time) []uint32 {
	var out []uint32
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRestartPolicyNeverEndsTerminal(t *testing.T) {
	n := startNode(t)
	n.writeManifest("ok.yaml", manifest("ok", `  restartPolicy: Never
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "echo done"]
`))
	n.writeManifest("bad.yaml", manifest("bad", `  restartPolicy: Never
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "exit 3"]
`))
	ok := n.waitPod("ok", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	bad := n.waitPod("bad", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if c := containerStatus(ok, "main"); c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 || c.State.Terminated.Reason != "Completed" || c.RestartCount != 0 {
		t.Errorf("succeeded pod: %s", describe(ok))
	}
	if c := containerStatus(bad, "main"); c.State.Terminated == nil || c.State.Terminated.ExitCode != 3 || c.State.Terminated.Reason != "Error" || c.RestartCount != 0 {
		t.Errorf("failed pod: %s", describe(bad))
	}
	// Terminal pods are not run again: exactly one container instance each,
	// and the sandbox is stopped.
	for _, p := range []*v1.Pod{ok, bad} {
		framework.Eventually(t, p.Name+" sandbox stopped", func() (bool, string) {
			sbs, cs := runtimePod(t, string(p.UID))
			return len(cs) == 1 && len(sbs) == 1 && sbs[0].State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY, fmt.Sprintf("%d containers, sandboxes %v", len(cs), sbs)
		})
	}
}

func TestInitContainersRunInOrderAndAFailureBlocks(t *testing.T) {
	n := startNode(t)
	n.writeManifest("init.yaml", manifest("init", `  initContainers:
  - name: first
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "sleep 1"]
  - name: second
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "true"]
  containers:
  - name: app
    image: gokubelet.local/testimage:1.0
`))
	n.writeManifest("blocked.yaml", manifest("blocked", `  restartPolicy: Never
  initContainers:
  - name: fails
    image: gokubelet.local/testimage:1.0
    command: ["sh", "-c", "exit 7"]
  containers:
  - name: app
    image: gokubelet.local/testimage:1.0
`))
	p := n.waitPod("init", "Running", isRunningReady)
	first, second := containerStatus(p, "first"), containerStatus(p, "second")
	if first.State.Terminated == nil || second.State.Terminated == nil {
		t.Fatalf("init containers not terminated: %s", describe(p))
	}
	if second.State.Terminated.StartedAt.Before(&first.State.Terminated.FinishedAt) {
		t.Errorf("second init container started %v, before the first finished %v", second.State.Terminated.StartedAt, first.State.Terminated.FinishedAt)
	}
	app := containerStatus(p, "app")
	if app.State.Running == nil || app.State.Running.StartedAt.Before(&second.State.Terminated.FinishedAt) {
		t.Errorf("app started before init finished: %s", describe(p))
	}

	b := n.waitPod("blocked", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if c := containerStatus(b, "fails"); c.State.Terminated == nil || c.State.Terminated.ExitCode != 7 {
		t.Errorf("failed init container: %s", describe(b))
	}
	if c := containerStatus(b, "app"); c.State.Running != nil || c.State.Terminated != nil {
		t.Errorf("app container ran although init failed: %s", describe(b))
	}
	_, cs := runtimePod(t, string(b.UID))
	for _, c := range cs {
		if c.Metadata.Name == "app" {
			t.Errorf("runtime has the app container of a pod whose init failed")
		}
	}
}

func TestEditedManifestRecreatesPod(t *testing.T) {
	n := startNode(t)
	n.writeManifest("web.yaml", manifest("web", webSpec))
	old := n.waitPod("web", "Running", isRunningReady)
	n.writeManifest("web.yaml", manifest("web", webSpec+`    env:
    - name: VERSION
      value: "2"
`))
	cur := n.waitPod("web", "a new UID Running", func(p *v1.Pod) bool { return p.UID != old.UID && isRunningReady(p) })
	framework.Eventually(t, "the old pod is gone from the runtime", func() (bool, string) {
		sbs, cs := runtimePod(t, string(old.UID))
		return len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("%d sandboxes, %d containers", len(sbs), len(cs))
	})
	// The pod has no readiness probe, so Ready does not mean its server
	// listens yet; a refused connection is retried, a wrong body is not.
	framework.Eventually(t, "the new pod serves its environment", func() (bool, string) {
		code, body := framework.HTTPGet(fmt.Sprintf("http://%s:8080/env", cur.Status.PodIP))
		if code == 200 && !strings.Contains(body, "VERSION=2") {
			t.Fatalf("the new pod does not run the edited spec: %s", body)
		}
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
}

func TestRemovedManifestTearsDownWithinGrace(t *testing.T) {
	n := startNode(t)
	// One container ignores SIGTERM and must be killed at the end of its
	// grace period; the other exits on SIGTERM at once.
	n.writeManifest("stubborn.yaml", manifest("stubborn", `  terminationGracePeriodSeconds: 4
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    command: ["/testserver", "--ignore-term"]
`))
	n.writeManifest("polite.yaml", manifest("polite", `  terminationGracePeriodSeconds: 60
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
`))
	stubborn := n.waitPod("stubborn", "Running", isRunningReady)
	polite := n.waitPod("polite", "Running", isRunningReady)

	for _, tc := range []struct {
		pod      *v1.Pod
		file     string
		min, max time.Duration
	}{
		// Killed no earlier than its 4s grace period; the upper bound only
		// turns a hang into a failure.
		{stubborn, "stubborn.yaml", 4 * time.Second, 30 * time.Second},
		// Exits on SIGTERM: gone long before its 60s grace period.
		{polite, "polite.yaml", 0, 30 * time.Second},
	} {
		start := time.Now()
		n.removeManifest(tc.file)
		framework.Eventually(t, tc.pod.Name+" gone from the runtime", func() (bool, string) {
			sbs, cs := runtimePod(t, string(tc.pod.UID))
			return len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("%d sandboxes, %d containers", len(sbs), len(cs))
		})
		took := time.Since(start)
		if took < tc.min || took > tc.max {
			t.Errorf("%s torn down in %v, want between %v and %v", tc.pod.Name, took, tc.min, tc.max)
		}
		if _, ok := n.pod(strings.TrimSuffix(tc.pod.Name, "-"+nodeName)); ok {
			t.Errorf("%s still in /pods", tc.pod.Name)
		}
	}
	if !strings.Contains(n.Log(), "Killing") {
		t.Errorf("no Killing event in the kubelet log")
	}
}

// syncedLine matches the kubelet's per-sync log line for a pod UID.
func syncedLine(uid string) *regexp.Regexp {
	return regexp.MustCompile(`"Pod synced".*podUID="` + regexp.QuoteMeta(uid) + `".*changed=(true|false)`)
}

func TestKubeletRestartRestartsNoContainer(t *testing.T) {
	n := startNode(t)
	n.writeManifest("web.yaml", manifest("web", webSpec))
	n.writeManifest("init.yaml", manifest("init", `  initContainers:
  - name: first
    image: gokubelet.local/testimage:1.0
    command: ["true"]
  containers:
  - name: app
    image: gokubelet.local/testimage:1.0
`))
	before := map[string][]string{}
	for _, name := range []string{"web", "init"} {
		p := n.waitPod(name, "Running", isRunningReady)
		_, cs := runtimePod(t, string(p.UID))
		before[string(p.UID)] = containerIDs(cs)
	}
	n.Kill9(t)
	logBefore := len(n.Log())
	n.Start(t)
	for uid := range before {
		// Wait for the restarted kubelet's first sync of the pod, and check
		// that it changed nothing.
		re := syncedLine(uid)
		framework.Eventually(t, "first sync of "+uid+" after the restart", func() (bool, string) {
			return re.MatchString(n.Log()[logBefore:]), "no sync line yet"
		})
		m := re.FindStringSubmatch(n.Log()[logBefore:])
		if m[1] != "false" {
			t.Errorf("the restarted kubelet acted on pod %s: %s", uid, m[0])
		}
		_, cs := runtimePod(t, uid)
		if got := containerIDs(cs); strings.Join(got, ",") != strings.Join(before[uid], ",") {
			t.Errorf("pod %s containers changed across the restart: %v -> %v", uid, before[uid], got)
		}
	}
	for _, name := range []string{"web", "init"} {
		p := n.waitPod(name, "Running after the restart", isRunningReady)
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if c.RestartCount != 0 {
				t.Errorf("%s/%s restartCount = %d after a kubelet restart", name, c.Name, c.RestartCount)
			}
		}
	}
}

func containerIDs(cs []*runtimeapi.Container) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Id)
	}
	sortStrings(ids)
	return ids
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestInvalidManifestIsReportedAndOthersRun(t *testing.T) {
	n := startNode(t)
	n.writeManifest("web.yaml", manifest("web", webSpec))
	n.writeManifest("broken.yaml", manifest("broken", `  containers:
  - name: nope
    imagePullPolicy: IfNotPresent
`))
	n.writeManifest("garbage.yaml", "this: is: not yaml: [")
	web := n.waitPod("web", "Running", isRunningReady)
	framework.Eventually(t, "both invalid manifests reported with their cause", func() (bool, string) {
		log := n.Log()
		return strings.Contains(log, "broken.yaml") && strings.Contains(log, "image") && strings.Contains(log, "garbage.yaml"), "not yet in the log"
	})
	if _, ok := n.pod("broken"); ok {
		t.Errorf("an invalid manifest produced a pod")
	}
	// Fixing the broken manifest starts it; the good pod is untouched.
	n.writeManifest("broken.yaml", manifest("broken", webSpec))
	n.waitPod("broken", "Running once fixed", isRunningReady)
	cur := n.waitPod("web", "still Running", isRunningReady)
	if cur.UID != web.UID || containerStatus(cur, "web").RestartCount != 0 {
		t.Errorf("the valid pod was disturbed: %s", describe(cur))
	}
}

func TestHostPortReachesThePod(t *testing.T) {
	n := startNode(t)
	hostPort := framework.FreePort(t)
	n.writeManifest("hp.yaml", manifest("hp", fmt.Sprintf(`  containers:
  - name: web
    image: gokubelet.local/testimage:1.0
    ports:
    - containerPort: 8080
      hostPort: %d
`, hostPort)))
	n.waitPod("hp", "Running", isRunningReady)
	framework.Eventually(t, "the pod answers on its host port", func() (bool, string) {
		code, body := framework.HTTPGet(fmt.Sprintf("http://127.0.0.1:%d/healthz", hostPort))
		return code == 200 && body == "ok", fmt.Sprintf("%d %s", code, body)
	})
}

func TestResourceLimitsReachTheCgroup(t *testing.T) {
	n := startNode(t)
	n.writeManifest("limited.yaml", manifest("limited", `  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 500m, memory: 64Mi}
`))
	p := n.waitPod("limited", "Running", isRunningReady)
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass = %s, want Burstable", p.Status.QOSClass)
	}
	_, cs := runtimePod(t, string(p.UID))
	if len(cs) != 1 {
		t.Fatalf("containers: %v", cs)
	}
	// cgroup v1 (memory and cpu hierarchies) or v2 (unified), whichever the
	// machine has; under the kubelet's cgroupRoot (the harness's).
	dir := fmt.Sprintf("%s/kubepods/burstable/pod%s/%s", strings.TrimPrefix(podCgroupRoot, "/"), p.UID, cs[0].Id)
	type check struct{ file, want string }
	var checks []check
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		checks = []check{
			{"/sys/fs/cgroup/memory/" + dir + "/memory.limit_in_bytes", "67108864"},
			{"/sys/fs/cgroup/cpu/" + dir + "/cpu.cfs_quota_us", "50000"},
			{"/sys/fs/cgroup/cpu/" + dir + "/cpu.shares", "102"},
		}
	} else {
		checks = []check{
			{"/sys/fs/cgroup/" + dir + "/memory.max", "67108864"},
			{"/sys/fs/cgroup/" + dir + "/cpu.max", "50000 100000"},
		}
	}
	for _, c := range checks {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != c.want {
			t.Errorf("%s = %s, want %s", c.file, got, c.want)
		}
	}
}

func TestImageProblemsAreReportedAndOthersRun(t *testing.T) {
	n := startNode(t)
	n.writeManifest("web.yaml", manifest("web", webSpec))
	// A registry on a loopback port nobody listens on: pulls fail at once.
	const missing = "127.0.0.1:1/gokubelet/missing:1.0"
	for _, tc := range []struct{ name, image, policy string }{
		{"never", missing, "Never"},
		{"pull", missing, "IfNotPresent"},
		{"invalid", "Bad_Image::Name", "IfNotPresent"},
	} {
		n.writeManifest(tc.name+".yaml", manifest(tc.name, fmt.Sprintf(`  containers:
  - name: main
    image: %s
    imagePullPolicy: %s
`, tc.image, tc.policy)))
	}
	waiting := func(reasons ...string) func(p *v1.Pod) bool {
		return func(p *v1.Pod) bool {
			c := containerStatus(p, "main")
			if c == nil || c.State.Waiting == nil {
				return false
			}
			for _, r := range reasons {
				if c.State.Waiting.Reason == r && c.State.Waiting.Message != "" {
					return true
				}
			}
			return false
		}
	}
	n.waitPod("never", "ErrImageNeverPull", waiting("ErrImageNeverPull"))
	n.waitPod("pull", "ImagePullBackOff after ErrImagePull", waiting("ImagePullBackOff"))
	n.waitPod("invalid", "InvalidImageName", waiting("InvalidImageName"))
	for _, name := range []string{"never", "pull", "invalid"} {
		if p, _ := n.pod(name); p.Status.Phase != v1.PodPending {
			t.Errorf("%s: phase %s, want Pending", name, p.Status.Phase)
		}
	}
	if !strings.Contains(n.Log(), missing) {
		t.Errorf("the kubelet log does not name the image that failed")
	}
	n.waitPod("web", "Running alongside", isRunningReady)
}

func TestManifestURLSource(t *testing.T) {
	var mu sync.Mutex
	body := manifest("fromurl", webSpec)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Node") != nodeName {
			http.Error(w, "missing header", http.StatusForbidden)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	n := startNodeWith(t, fmt.Sprintf("staticPodURL: %s\nstaticPodURLHeader:\n  X-Node: [%q]\nhttpCheckFrequency: 1s\n", srv.URL, nodeName))
	p := n.waitPod("fromurl", "Running from the URL", isRunningReady)
	if p.Annotations["kubernetes.io/config.source"] != "http" {
		t.Errorf("config.source = %q, want http", p.Annotations["kubernetes.io/config.source"])
	}
	// The URL stops serving the pod: it is torn down.
	mu.Lock()
	body = ""
	mu.Unlock()
	framework.Eventually(t, "the pod gone from the runtime", func() (bool, string) {
		sbs, cs := runtimePod(t, string(p.UID))
		return len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("%d sandboxes, %d containers", len(sbs), len(cs))
	})
}
