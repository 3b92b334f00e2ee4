package e2e

// Faults a node survives: the kubelet killed with -9 under 50 pods, the
// runtime restarted, the API server unreachable for two minutes, every
// container gone at once (as after a reboot), and pods that exhaust memory
// or disk (resources_test.go).

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// within polls cond every 200ms until it holds or limit passes: for the
// waits whose bound is set by the fault itself (50 pods starting on two
// cores, a two-minute outage), not by framework.WaitLimit.
func within(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last seen: %s", limit, what, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// probedPod is a server pod with a startup and a readiness probe, so
// "started" and "ready" are the kubelet's verdicts, not mere running.
func probedPod(name string) *v1.Pod {
	p := testPod(name)
	p.Labels = map[string]string{"app": "probed"}
	get := func(path string, period, failures int32) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
			PeriodSeconds: period, FailureThreshold: failures, TimeoutSeconds: 5}
	}
	// The faults under test are the kubelet's and the runtime's, not a slow
	// machine's: a server that takes more than 3 s to listen while 50 pods
	// start on a loaded 2-core machine is not restarted (with threshold 3
	// it was, under load here: the likely cause of this test's failure on
	// CI), and a probe answered in more than 1 s is not a failure.
	p.Spec.Containers[0].StartupProbe = get("/healthz", 1, 60)
	p.Spec.Containers[0].ReadinessProbe = get("/readyz", 2, 3)
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	return p
}

// instance is what must not change about a running container across a
// fault.
type instance struct {
	containerID string
	restarts    int32
}

func instances(t *testing.T, ns, selector string) map[string]instance {
	t.Helper()
	out := map[string]instance{}
	for _, p := range listPods(t, ns, selector) {
		if len(p.Status.ContainerStatuses) == 0 {
			t.Fatalf("%s has no container status", p.Name)
		}
		cs := p.Status.ContainerStatuses[0]
		out[p.Name] = instance{cs.ContainerID, cs.RestartCount}
	}
	return out
}

func allRunning(t *testing.T, ns, selector string, n int) func() (bool, string) {
	return func() (bool, string) {
		pods := listPods(t, ns, selector)
		ok := 0
		var bad []string
		for i := range pods {
			if running(&pods[i]) {
				ok++
			} else if len(bad) < 3 {
				bad = append(bad, fmt.Sprintf("%s: phase=%s %v", pods[i].Name, pods[i].Status.Phase, pods[i].Status.ContainerStatuses))
			}
		}
		return ok == n && len(pods) == n, fmt.Sprintf("%d/%d running; %v", ok, n, bad)
	}
}

// flapWatch watches a namespace's pods through an informer and records
// every transition a restarted kubelet must never cause: a Ready pod
// reported not Ready, a started container reported not started, a container
// replaced or restarted, a pod deleted.
type flapWatch struct {
	mu    sync.Mutex
	flaps []string
	stop  chan struct{}
}

func watchFlaps(t *testing.T, ns string) *flapWatch {
	t.Helper()
	w := &flapWatch{stop: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			old, cur := o.(*v1.Pod), n.(*v1.Pod)
			var why []string
			if podCondition(old, v1.PodReady) && !podCondition(cur, v1.PodReady) {
				why = append(why, "Ready condition went False")
			}
			for _, oc := range old.Status.ContainerStatuses {
				for _, nc := range cur.Status.ContainerStatuses {
					if oc.Name != nc.Name {
						continue
					}
					if oc.Ready && !nc.Ready {
						why = append(why, nc.Name+" not ready")
					}
					if ptr.Deref(oc.Started, false) && !ptr.Deref(nc.Started, false) {
						why = append(why, nc.Name+" not started")
					}
					if oc.ContainerID != "" && oc.ContainerID != nc.ContainerID {
						why = append(why, fmt.Sprintf("%s replaced %s -> %s", nc.Name, oc.ContainerID, nc.ContainerID))
					}
					if nc.RestartCount > oc.RestartCount {
						why = append(why, fmt.Sprintf("%s restarted (%d)", nc.Name, nc.RestartCount))
					}
				}
			}
			if len(why) > 0 {
				w.mu.Lock()
				w.flaps = append(w.flaps, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.000"), cur.Name, strings.Join(why, ", ")))
				w.mu.Unlock()
			}
		},
		DeleteFunc: func(o any) {
			if p, ok := o.(*v1.Pod); ok {
				w.mu.Lock()
				w.flaps = append(w.flaps, p.Name+" deleted")
				w.mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go inf.Run(w.stop)
	if !cache.WaitForCacheSync(w.stop, inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	t.Cleanup(w.close)
	return w
}

func (w *flapWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
}

func (w *flapWatch) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.flaps...)
}

func podCondition(p *v1.Pod, c v1.PodConditionType) bool {
	for _, x := range p.Status.Conditions {
		if x.Type == c {
			return x.Status == v1.ConditionTrue
		}
	}
	return false
}

// probedSince reports whether the pod's server, in its current instance,
// logged a readiness probe request after since (the CRI log line's own
// timestamp). The instance's log is <restartCount>.log.
func probedSince(p *v1.Pod, since time.Time) bool {
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	file := fmt.Sprintf("%d.log", p.Status.ContainerStatuses[0].RestartCount)
	f, err := os.Open(filepath.Join(podLogsDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "main", file))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, " /readyz ") {
			continue
		}
		ts, _, _ := strings.Cut(line, " ")
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.After(since) {
			found = true
		}
	}
	return found
}

func waitNodeReady(t *testing.T, name string, limit time.Duration) *v1.Node {
	t.Helper()
	var got *v1.Node
	within(t, limit, "node "+name+" Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = n
		return nodeReady(n), fmt.Sprint(n.Status.Conditions)
	})
	return got
}

// The kubelet is killed (-9) under 50 pods with startup and readiness
// probes, and started again. No container restarts, no pod is ever
// reported not Ready or not started on the way (an informer sees every
// status write; the wait ends only once the new kubelet has probed every
// pod), statuses stay right, and new pods start.
func TestKubeletKill9Under50PodsNoFlap(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()
	const n = 50
	for i := 0; i < n; i++ {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, probedPod(fmt.Sprintf("p%02d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	within(t, 5*time.Minute, "50 pods Running and Ready", allRunning(t, ns, "app=probed", n))
	before := instances(t, ns, "app=probed")
	w := watchFlaps(t, ns)

	killed := time.Now()
	kubelet.Kill9(t)
	kubelet.Start(t)
	waitNodeReady(t, name, framework.WaitLimit)
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "after", "Running after the restart", running)
	// Every pod's readiness probe ran again under the new kubelet: any
	// reset of readiness would have been written by now.
	within(t, 2*time.Minute, "every pod probed by the restarted kubelet", func() (bool, string) {
		pods := listPods(t, ns, "app=probed")
		var left []string
		for i := range pods {
			if !probedSince(&pods[i], killed) {
				left = append(left, pods[i].Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("not probed yet: %v", left)
	})
	// The absence of a flap needs an observation window: the status
	// writer writes what the probes' results changed within a second or
	// two; give it ten.
	time.Sleep(10 * time.Second)
	w.close()
	if f := w.seen(); len(f) > 0 {
		t.Errorf("%d status flaps across the kubelet restart:\n%s", len(f), strings.Join(f, "\n"))
	}
	after := instances(t, ns, "app=probed")
	for pod, b := range before {
		if a := after[pod]; a != b {
			t.Errorf("%s changed across the restart: %+v -> %+v", pod, b, a)
		}
	}
	for _, p := range listPods(t, ns, "app=probed") {
		if !running(&p) || !podCondition(&p, v1.PodReady) || !ptr.Deref(p.Status.ContainerStatuses[0].Started, false) {
			t.Errorf("%s not Running, Ready and started after the restart: %v", p.Name, p.Status)
		}
	}
}

// containerdPidFile is where hack/containerd.sh keeps the test instance's
// pid.
func containerdPidFile() string { return "/run/gokubelet/" + framework.Instance() + "/containerd.pid" }

// containerd is stopped (its containers keep running in their shims) and
// started again: no pod loses its containers, nothing restarts, statuses
// stay right, the node is Ready again and new pods start.
func TestContainerdRestartKeepsPods(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()
	pods := []*v1.Pod{probedPod("always"), testPod("never"), testPod("onfailure")}
	pods[1].Spec.RestartPolicy = v1.RestartPolicyNever
	pods[2].Spec.RestartPolicy = v1.RestartPolicyOnFailure
	for _, p := range pods {
		p.Labels = map[string]string{"app": "ctrd"}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, "pods Running", allRunning(t, ns, "app=ctrd", len(pods)))
	before := instances(t, ns, "app=ctrd")
	w := watchFlaps(t, ns)

	b, err := os.ReadFile(containerdPidFile())
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping containerd: %v", err)
	}
	framework.Eventually(t, "containerd stopped", func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, "still running"
	})
	// The kubelet notices: the runtime is down, the node NotReady with
	// the reason; it kills and deletes nothing meanwhile.
	framework.Eventually(t, "node NotReady while the runtime is down", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !nodeReady(n), fmt.Sprint(n.Status.Conditions)
	})
	if err := framework.Script(repoRoot, nil, "hack/containerd.sh", "up", framework.Instance()); err != nil {
		t.Fatal(err)
	}
	waitNodeReady(t, name, framework.WaitLimit)
	framework.Eventually(t, "pods Running after the runtime restart", allRunning(t, ns, "app=ctrd", len(pods)))
	after := instances(t, ns, "app=ctrd")
	for pod, b := range before {
		if a := after[pod]; a != b {
			t.Errorf("%s changed across the containerd restart: %+v -> %+v", pod, b, a)
		}
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "new", "Running after the runtime restart", running)
	w.close()
	for _, f := range w.seen() {
		if !strings.HasPrefix(f, "new ") {
			t.Errorf("flap across the containerd restart: %s", f)
		}
	}
}

// Every container of the node disappears at once, as after a reboot: every
// pod is recreated (new sandboxes and containers), none is lost.
func TestAllContainersGoneRecreatesPods(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	const n = 5
	for i := 0; i < n; i++ {
		p := testPod(fmt.Sprintf("r%d", i))
		p.Labels = map[string]string{"app": "reboot"}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, "pods Running", allRunning(t, ns, "app=reboot", n))
	before := instances(t, ns, "app=reboot")
	uids := map[string]string{}
	for _, p := range listPods(t, ns, "app=reboot") {
		uids[p.Name] = string(p.UID)
	}
	// Remove every sandbox of every pod on the node (the kubelet's own
	// pods and any other test's alike: a reboot spares none).
	if err := framework.ClearRuntime(runtimeSvc); err != nil {
		t.Fatal(err)
	}
	within(t, 2*time.Minute, "every pod running new containers", func() (bool, string) {
		pods := listPods(t, ns, "app=reboot")
		fresh := 0
		for i := range pods {
			if running(&pods[i]) && pods[i].Status.ContainerStatuses[0].ContainerID != before[pods[i].Name].containerID {
				fresh++
			}
		}
		return fresh == n && len(pods) == n, fmt.Sprintf("%d/%d recreated", fresh, n)
	})
	for _, p := range listPods(t, ns, "app=reboot") {
		if uids[p.Name] != string(p.UID) {
			t.Errorf("%s was replaced by another pod", p.Name)
		}
		sbs, err := runtimeSvc.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(p.UID)}})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, sb := range sbs {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready++
			}
		}
		if ready != 1 {
			t.Errorf("%s: %d ready sandboxes in the runtime, want 1", p.Name, ready)
		}
	}
}

// The API server is unreachable from the node for two minutes (a proxy
// between them is cut; everyone else still reaches it). Pods keep running
// and are neither killed nor deleted for it, a status change made meanwhile
// reaches the API once it is back, the node is Ready again, and new pods
// start.
func TestAPIServerUnreachableTwoMinutes(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()

	// A kubelet of the same node that reaches the API server through the
	// proxy only.
	cfg, err := clientcmd.LoadFromFile(clusterEnv["NODE_KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	var server string
	for _, c := range cfg.Clusters {
		server = c.Server
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := framework.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	for _, c := range cfg.Clusters {
		c.Server = "https://" + proxy.Addr()
		c.TLSServerName = u.Hostname()
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	proxied := swapKubelet(t, func(args []string) []string { return replaceArg(args, "--kubeconfig", kubeconfig) })

	long := testPod("long")
	short := testPod("short")
	short.Spec.RestartPolicy = v1.RestartPolicyNever
	short.Spec.Containers[0].Command = []string{"sh", "-c", "echo started; sleep 50; exit 3"}
	for _, p := range []*v1.Pod{long, short} {
		p.Labels = map[string]string{"app": "outage"}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, "pods Running", allRunning(t, ns, "app=outage", 2))
	before := instances(t, ns, "app=outage")
	w := watchFlaps(t, ns)

	cut := time.Now()
	proxy.SetDown(true)
	// Two minutes of outage: the short pod ends meanwhile; the node
	// controller marks the node unreachable (Unknown) but, with the
	// default 300s toleration, evicts nothing.
	deadline := cut.Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		_, cs := runtimePodByName(t, ns, "long")
		if len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("the long pod's container is not running during the outage: %+v", cs)
		}
		time.Sleep(2 * time.Second)
	}
	if p, _ := client.CoreV1().Pods(ns).Get(ctx, "short", metav1.GetOptions{}); p != nil && p.Status.Phase != v1.PodRunning {
		t.Fatalf("the short pod's end reached the API during the outage: %s", p.Status.Phase)
	}
	proxy.SetDown(false)

	waitNodeReady(t, name, framework.WaitLimit)
	waitPod(t, ns, "short", "Failed with exit code 3 (the change made during the outage)", func(p *v1.Pod) bool {
		if p.Status.Phase != v1.PodFailed || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 3
	})
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "after", "Running after the outage", running)
	p := waitPod(t, ns, "long", "Running and Ready again", func(p *v1.Pod) bool { return running(p) && podCondition(p, v1.PodReady) })
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != before["long"].containerID || cs.RestartCount != 0 {
		t.Errorf("the long pod's container changed across the outage: %+v -> %s restarts %d", before["long"], cs.ContainerID, cs.RestartCount)
	}
	w.close()
	// The node controller marks the pods of an unreachable node not Ready;
	// what must never happen is a container killed, replaced or a pod
	// deleted.
	for _, f := range w.seen() {
		if strings.Contains(f, "replaced") || strings.Contains(f, "restarted") || strings.HasSuffix(f, " deleted") {
			t.Errorf("across the outage: %s", f)
		}
	}
	_ = proxied
	deleteAllPods(t, ns)
}

// runtimePodByName lists the runtime's sandboxes and containers of a pod.
func runtimePodByName(t *testing.T, ns, name string) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	t.Helper()
	ctx := context.Background()
	sel := map[string]string{"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": name}
	sbs, err := runtimeSvc.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := runtimeSvc.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return sbs, cs
}

// swapKubelet stops the shared kubelet and runs, in its place and with its
// node identity, one whose arguments edit returns; at the end of the test
// the shared kubelet comes back.
func swapKubelet(t *testing.T, edit func([]string) []string) *framework.Kubelet {
	t.Helper()
	if err := kubelet.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	k := &framework.Kubelet{Bin: kubelet.Bin, Args: edit(append([]string(nil), kubelet.Args...)), HealthzPort: kubelet.HealthzPort}
	k.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("swapped kubelet log:\n%s", framework.Tail(k.Log(), 150))
		}
		if err := k.Signal(syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		kubelet.Start(t)
		waitNodeReady(t, clusterEnv["NODE_NAME"], framework.WaitLimit)
	})
	waitNodeReady(t, clusterEnv["NODE_NAME"], framework.WaitLimit)
	return k
}

func replaceArg(args []string, flag, value string) []string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			args[i+1] = value
			return args
		}
	}
	return append(args, flag, value)
}

// deleteAllPods deletes a namespace's pods at once and waits for them to
// be gone (while the kubelet that runs them is still there).
func deleteAllPods(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	within(t, 2*time.Minute, "the namespace's pods gone", func() (bool, string) {
		pods := listPods(t, ns, "")
		return len(pods) == 0, fmt.Sprintf("%d left", len(pods))
	})
}
