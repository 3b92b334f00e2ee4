package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// The scale benchmark of virtual nodes (make bench-scale): pods created at
// once, bound by nodeName to a contender's node (or spread evenly over its
// nodes), until every one is Running as seen through a watch, for four
// contenders one after another on the same cluster:
//
//	floor  the driver creates each pod and PATCHes it Running itself, with
//	       the contenders' identity: the most this API server carries
//	ours   our kubelet with mock-backed virtual nodes (realNode: false), all
//	       of them in one process
//	vk     Virtual Kubelet's own command with its mock provider, defaults;
//	       one node per process, so only at the one-node sizes
//	kwok   KWOK's controller with its default ("fast") stages, one process
//	       for every node
//
// Sizes (scaleSizes): pods on one node over several rounds, then one round
// of a large number on one node, then one round of N nodes with M pods each.
//
// Every contender's API requests go through one identity
// (gokubelet:virtual-nodes, hack/virtual-nodes.sh creds) whose flow schema
// (gokubelet-bench-contenders, hack/bench-scale.yaml) counts them; the
// driver creates the pods as admin.

// Contenders, in the order of a round.
var scaleKinds = []string{"floor", "ours", "kwok", "vk"}

// scaleFlowSchema is the APF flow schema of the contenders' identity
// (hack/bench-scale.yaml).
const scaleFlowSchema = "gokubelet-bench-contenders"

// scaleOptions are the scale benchmark's flags.
type scaleOptions struct {
	pods, rounds, large int
	// nodes and podsPerNode: one round of that many nodes per contender
	// with that many pods each (0: none).
	nodes, podsPerNode  int
	timeout             time.Duration
	createWorkers       int
	kinds               []string
	vk, kwok, kwokCfg   string
	vkVersion           string
	kwokVersion         string
	contenderKubeconfig string
	// oursTop and oursNode are lines added to our kubelet's VirtualNodes
	// file, at the top level and to its node (experiments; the report
	// shows them).
	oursTop, oursNode string
}

// scaleBench is one run of the scale benchmark.
type scaleBench struct {
	b     *bench
	o     scaleOptions
	admin kubernetes.Interface // the driver: creates, deletes, lists
	watch kubernetes.Interface // the driver's watch, on a connection of its own
	ident kubernetes.Interface // the contenders' identity: the floor's PATCHes
	// notes[kind][wl]: what a run of that kind and workload left to say
	// (time-outs, incomplete statuses), and the requests' breakdown.
	notes     map[string]map[string][]string
	breakdown map[string]map[string]string
	wall      time.Duration
}

func (s *scaleBench) note(kind, wl, msg string) {
	if s.notes[kind] == nil {
		s.notes[kind] = map[string][]string{}
	}
	s.notes[kind][wl] = append(s.notes[kind][wl], msg)
}

// scaleSize is one size of the benchmark: every contender runs nodes nodes
// with perNode pods on each, rounds times.
type scaleSize struct {
	nodes, perNode, rounds int
	// goal: the acceptance names this size (ours at least 0.8× the
	// floor's pods/s).
	goal bool
}

func (z scaleSize) pods() int { return z.nodes * z.perNode }

// tag names the size in workload keys, namespaces and files: "1000" for
// pods on one node, "100x100" for nodes × pods per node.
func (z scaleSize) tag() string {
	if z.nodes == 1 {
		return fmt.Sprint(z.perNode)
	}
	return fmt.Sprintf("%dx%d", z.nodes, z.perNode)
}

// wl is the size's workload key in the results.
func (z scaleSize) wl() string { return "scale-" + z.tag() }

func (z scaleSize) String() string {
	if z.nodes == 1 {
		return fmt.Sprintf("%d pods on one node", z.perNode)
	}
	return fmt.Sprintf("%d nodes × %d pods (%d pods)", z.nodes, z.perNode, z.pods())
}

// scaleSizes are a run's sizes in order: o.pods on one node for o.rounds
// rounds, then one round of o.large on one node, then one round of o.nodes
// nodes with o.podsPerNode each; a size of 0 is left out.
func scaleSizes(o scaleOptions) []scaleSize {
	var out []scaleSize
	if o.pods > 0 && o.rounds > 0 {
		out = append(out, scaleSize{nodes: 1, perNode: o.pods, rounds: o.rounds})
	}
	if o.large > 0 {
		out = append(out, scaleSize{nodes: 1, perNode: o.large, rounds: 1, goal: true})
	}
	if o.nodes > 0 && o.podsPerNode > 0 {
		out = append(out, scaleSize{nodes: o.nodes, perNode: o.podsPerNode, rounds: 1, goal: true})
	}
	return out
}

// runsAt says whether a contender runs at a size: Virtual Kubelet serves
// one node per process, and one process per node (~80 MiB each) is more
// than this benchmark runs, so it sits out the sizes of several nodes.
func runsAt(kind string, z scaleSize) bool { return kind != "vk" || z.nodes == 1 }

// kindsAt are the contenders of a size, in the order of a round.
func (s *scaleBench) kindsAt(z scaleSize) []string {
	var out []string
	for _, k := range s.o.kinds {
		if runsAt(k, z) {
			out = append(out, k)
		}
	}
	return out
}

// scaleNodeNames are a contender's Nodes at a size: scale-<kind> alone, or
// scale-<kind>-<i> with several, i zero-padded to the widest (-00 ... -99).
func scaleNodeNames(kind string, nodes int) []string {
	if nodes == 1 {
		return []string{"scale-" + kind}
	}
	width := len(fmt.Sprint(nodes - 1))
	out := make([]string, nodes)
	for i := range out {
		out[i] = fmt.Sprintf("scale-%s-%0*d", kind, width, i)
	}
	return out
}

// spread binds n pods to nodes evenly: pod i to nodes[i mod len(nodes)].
func spread(n int, nodes []string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = nodes[i%len(nodes)]
	}
	return out
}

func newScaleBench(b *bench, o scaleOptions) (*scaleBench, error) {
	adminKC := filepath.Join(b.opt.clusterDir, "admin.kubeconfig")
	admin, err := fastClient(adminKC, false)
	if err != nil {
		return nil, err
	}
	// The watch that times the pods must not wait behind the responses to
	// the creates on a shared connection.
	watch, err := fastClient(adminKC, true)
	if err != nil {
		return nil, err
	}
	ident, err := fastClient(o.contenderKubeconfig, true)
	if err != nil {
		return nil, err
	}
	return &scaleBench{b: b, o: o, admin: admin, watch: watch, ident: ident,
		notes: map[string]map[string][]string{}, breakdown: map[string]map[string]string{}}, nil
}

// fastClient is a client without a client-side rate limit, speaking
// protobuf: the driver shares the machine with the API server, so it should
// cost it as little CPU as possible. With ownConn it does not share its
// connection with other clients of the same credentials.
func fastClient(kubeconfig string, ownConn bool) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if ownConn {
		// client-go shares a transport between configs unless their dialers
		// differ.
		rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	rc.QPS = -1
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return kubernetes.NewForConfig(rc)
}

// run runs every size's rounds (scaleSizes).
func (s *scaleBench) run() error {
	start := time.Now()
	for _, z := range scaleSizes(s.o) {
		for r := 1; r <= z.rounds; r++ {
			for _, kind := range s.kindsAt(z) {
				logf("scale %s, round %d: %s", z, r, kind)
				if err := s.runOne(kind, z, r); err != nil {
					logf("scale %s round %d %s FAILED: %v", z, r, kind, err)
					s.b.fails = append(s.b.fails, fmt.Sprintf("scale %s, round %d, %s: %v", z, r, kind, err))
				}
			}
		}
	}
	s.wall = time.Since(start)
	return nil
}

// scaleTimeout is how long a contender may take to run n pods: the flag, or
// max(60s, 12ms per pod) — ample for anything above 83 pods/s; a slower
// contender's rate is measured over this much time.
func (s *scaleBench) scaleTimeout(n int) time.Duration {
	if s.o.timeout > 0 {
		return s.o.timeout
	}
	return max(60*time.Second, time.Duration(n)*12*time.Millisecond)
}

// runOne is one contender's run at a size: start it with fresh nodes, create
// the pods, wait for them Running, measure, stop it, remove everything.
func (s *scaleBench) runOne(kind string, z scaleSize, round int) (err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wl, n := z.wl(), z.pods()
	nodes := scaleNodeNames(kind, z.nodes)
	if err := s.removeNodes(ctx, nodes); err != nil {
		return err
	}
	ns := fmt.Sprintf("scale-%s-%s-r%d-%d", kind, z.tag(), round, time.Now().Unix()%100000)
	if err := s.createNamespace(ctx, ns); err != nil {
		return err
	}
	var proc *scaleProc
	defer func() {
		if proc != nil {
			proc.stop()
		}
		if cerr := s.cleanup(ns, nodes); cerr != nil && err == nil {
			err = cerr
		}
	}()
	tag := fmt.Sprintf("%s-%s-r%d", kind, z.tag(), round)
	if proc, err = s.startContender(ctx, kind, nodes, tag); err != nil {
		return err
	}
	if err := s.waitNodesReady(ctx, nodes, 120*time.Second); err != nil {
		if proc != nil {
			return fmt.Errorf("%w\nlog tail:\n%s", err, tailFile(proc.logPath, 20))
		}
		return err
	}
	// Let the contender settle after its nodes registered (informers
	// synced, first heartbeats written). The window's first sample is
	// then the contender with its nodes Ready and no pods (rss_idle).
	time.Sleep(3 * time.Second)

	t := newTracker()
	ready := make(chan struct{})
	go t.run(ctx, s.watch, ns, ready)
	<-ready
	names := podNames("p", n)
	bound := spread(n, nodes)
	pid := 0
	if proc != nil {
		pid = proc.pid()
		_ = resetPeakRSS(pid)
	}
	w0 := s.sample(ctx, pid)
	if err := s.createAll(ctx, kind, ns, bound, t, names); err != nil {
		return err
	}
	running := func(p *podTimes) bool { return !p.running.IsZero() }
	timeout := s.scaleTimeout(n)
	waitErr := t.waitAll(names, running, timeout)
	if waitErr != nil {
		s.note(kind, wl, fmt.Sprintf("round %d: %v", round, waitErr))
	}
	if proc != nil {
		select {
		case <-proc.exited:
			return fmt.Errorf("%s exited during the run\nlog tail:\n%s", kind, tailFile(proc.logPath, 20))
		default:
		}
	}
	time.Sleep(3 * time.Second)
	w1 := s.sample(ctx, pid)
	ts := t.snapshot(names)
	s.record(kind, wl, n, round, ts, w0, w1, timeout)
	writeTimes(filepath.Join(s.b.opt.workDir, "scale", tag+".times.csv"), names, ts)
	return s.verify(ctx, kind, wl, ns, names, bound, round)
}

// window samples: the contender's process, the control plane's CPU, the
// API server's request counters.
type scaleSample struct {
	at       time.Time
	proc     procSample
	procErr  error
	cpTicks  uint64
	dispatch float64
	requests map[string]float64
	// busyTicks is the machine's busy CPU time, selfTicks the driver's.
	busyTicks, selfTicks uint64
	// Server-side sums and counts: PATCH pods/status latency, and the
	// contenders' wait in API Priority and Fairness queues.
	patchSum, patchCount, waitSum, waitCount float64
	// terminated counts the pod watches the API server closed because
	// their client fell behind.
	terminated float64
}

func (s *scaleBench) sample(ctx context.Context, pid int) scaleSample {
	smp := scaleSample{at: time.Now(), dispatch: math.NaN()}
	if pid > 0 {
		smp.proc, smp.procErr = readProc(pid)
	}
	smp.cpTicks = controlPlaneTicks()
	if stat, err := os.ReadFile("/proc/stat"); err == nil {
		smp.busyTicks, _ = ParseMachineBusy(string(stat))
	}
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		smp.selfTicks, _ = ParseProcStatCPU(string(stat))
	}
	raw, err := s.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("metrics: %v", err)
		return smp
	}
	if v, err := SumDispatched(string(raw), []string{scaleFlowSchema}); err == nil {
		smp.dispatch = v
	} else {
		logf("metrics: %v", err)
	}
	smp.requests = RequestCounts(string(raw))
	patch := map[string]string{"verb": "PATCH", "resource": "pods", "subresource": "status"}
	smp.patchSum = SumSamples(string(raw), "apiserver_request_duration_seconds_sum", patch)
	smp.patchCount = SumSamples(string(raw), "apiserver_request_duration_seconds_count", patch)
	fs := map[string]string{"flow_schema": scaleFlowSchema, "execute": "true"}
	smp.waitSum = SumSamples(string(raw), "apiserver_flowcontrol_request_wait_duration_seconds_sum", fs)
	smp.waitCount = SumSamples(string(raw), "apiserver_flowcontrol_request_wait_duration_seconds_count", fs)
	smp.terminated = SumSamples(string(raw), "apiserver_terminated_watchers_total", map[string]string{"resource": "pods", "group": ""})
	return smp
}

// controlPlaneTicks is the CPU time (clock ticks) of every kube-apiserver
// and etcd process on the machine.
func controlPlaneTicks() uint64 {
	var sum uint64
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		comm, err := os.ReadFile("/proc/" + pid + "/comm")
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(comm)) {
		case "kube-apiserver", "etcd":
			if stat, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
				if t, err := ParseProcStatCPU(string(stat)); err == nil {
					sum += t
				}
			}
		}
	}
	return sum
}

func (s *scaleBench) record(kind, wl string, n, round int, ts []podTimes, w0, w1 scaleSample, timeout time.Duration) {
	r := s.b.res
	var first, last, lastSeen time.Time
	var lat []float64
	done := 0
	for _, p := range ts {
		if first.IsZero() || (!p.createIssued.IsZero() && p.createIssued.Before(first)) {
			first = p.createIssued
		}
		if p.scheduled.After(lastSeen) {
			lastSeen = p.scheduled
		}
		if p.running.IsZero() {
			continue
		}
		done++
		lat = append(lat, p.running.Sub(p.createIssued).Seconds())
		if p.running.After(last) {
			last = p.running
		}
	}
	elapsed := last.Sub(first).Seconds()
	if done < n {
		// Timed out: the rate over the whole time allowed.
		elapsed = timeout.Seconds()
	}
	r.add(kind, wl, "rate", Ratio(float64(done), elapsed))
	r.add(kind, wl, "batch", elapsed)
	r.add(kind, wl, "done", float64(done))
	sm := Summarize(lat)
	r.add(kind, wl, "p50", sm.P50)
	r.add(kind, wl, "p99", sm.P99)
	// Per pod it ran: a contender stopped at the time-out is not credited
	// with the pods it never got to.
	perPod := max(done, 1)
	r.add(kind, wl, "reqs", (w1.dispatch-w0.dispatch)/float64(perPod))
	r.add(kind, wl, "cp_cpu", float64(w1.cpTicks-w0.cpTicks)/clockTicks)
	var procTicks uint64
	if w0.procErr == nil && w1.procErr == nil && w1.proc.cpuTicks > 0 {
		procTicks = w1.proc.cpuTicks - w0.proc.cpuTicks
		r.add(kind, wl, "cpu", float64(procTicks)/clockTicks)
		r.add(kind, wl, "hwm", float64(w1.proc.hwmKB)/1024)
		r.add(kind, wl, "rss", float64(w1.proc.rssKB)/1024)
		r.add(kind, wl, "rss_idle", float64(w0.proc.rssKB)/1024)
		r.add(kind, wl, "mem_pod", PerPodKiB(w1.proc.rssKB, w0.proc.rssKB, done))
	}
	r.add(kind, wl, "created", lastSeen.Sub(first).Seconds())
	drv := w1.selfTicks - w0.selfTicks
	r.add(kind, wl, "drv_cpu", float64(drv)/clockTicks)
	other := float64(w1.busyTicks-w0.busyTicks) - float64(w1.cpTicks-w0.cpTicks) - float64(procTicks) - float64(drv)
	r.add(kind, wl, "other_cpu", max(other, 0)/clockTicks)
	r.add(kind, wl, "patch_ms", 1000*Ratio(w1.patchSum-w0.patchSum, w1.patchCount-w0.patchCount))
	r.add(kind, wl, "wait_ms", 1000*Ratio(w1.waitSum-w0.waitSum, w1.waitCount-w0.waitCount))
	r.add(kind, wl, "terminated", w1.terminated-w0.terminated)
	if w0.requests != nil && w1.requests != nil {
		if s.breakdown[kind] == nil {
			s.breakdown[kind] = map[string]string{}
		}
		s.breakdown[kind][wl] = FormatBreakdown(DiffCounts(w0.requests, w1.requests), perPod, []string{"POST pods"})
	}
	logf("%s %s round %d: %d/%d Running, %.1f pods/s, %.2f requests/pod", kind, wl, round, done, n,
		Ratio(float64(done), elapsed), (w1.dispatch-w0.dispatch)/float64(perPod))
}

// verify lists the pods once everything settled: "complete" is a pod that
// is Running with every container running and ready, the Ready condition
// True, an IP, and the status of this very pod (its UID) — what a kubelet
// must have written for the pod to count — on the node it was bound to
// (bound[i] for names[i]).
func (s *scaleBench) verify(ctx context.Context, kind, wl, ns string, names, bound []string, round int) error {
	n := len(names)
	nodeOf := make(map[string]string, n)
	for i, name := range names {
		nodeOf[name] = bound[i]
	}
	complete := 0
	var bad []string
	cont := ""
	for {
		l, err := s.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 2000, Continue: cont})
		if err != nil {
			return fmt.Errorf("verifying: %w", err)
		}
		for i := range l.Items {
			if why := incompleteStatus(&l.Items[i], nodeOf[l.Items[i].Name]); why == "" {
				complete++
			} else if len(bad) < 3 {
				bad = append(bad, l.Items[i].Name+": "+why)
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	s.b.res.add(kind, wl, "complete", float64(complete))
	if complete < n {
		s.note(kind, wl, fmt.Sprintf("round %d: %d of %d pods with a complete Running status (e.g. %s)", round, complete, n, strings.Join(bad, "; ")))
	}
	return nil
}

// incompleteStatus says what is missing from a Running pod's status ("" when
// nothing is).
func incompleteStatus(p *v1.Pod, nodeName string) string {
	switch {
	case p.Spec.NodeName != nodeName:
		return "on node " + p.Spec.NodeName
	case p.Status.Phase != v1.PodRunning:
		return "phase " + string(p.Status.Phase)
	case p.Status.PodIP == "":
		return "no podIP"
	case !allRunning(p):
		return "a container not running"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready {
			return "container " + cs.Name + " not ready"
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			return ""
		}
	}
	return "no Ready=True condition"
}

// ---- the cluster side ---------------------------------------------------

func (s *scaleBench) createNamespace(ctx context.Context, ns string) error {
	if _, err := s.admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The ServiceAccount admission plugin refuses pods until the namespace's
	// default ServiceAccount exists.
	for i := 0; ; i++ {
		if _, err := s.admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		} else if i > 300 {
			return fmt.Errorf("no default ServiceAccount in %s: %w", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitNodesReady waits until every node is Ready, within timeout in all.
func (s *scaleBench) waitNodesReady(ctx context.Context, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, name := range names {
		if err := s.waitNodeReady(ctx, name, deadline); err != nil {
			return err
		}
	}
	return nil
}

func (s *scaleBench) waitNodeReady(ctx context.Context, name string, deadline time.Time) error {
	last := ""
	for {
		n, err := s.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady {
					if c.Status == v1.ConditionTrue {
						return nil
					}
					last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message)
				}
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready in time: %s", name, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// removeNodes deletes a contender's Nodes and Leases, createWorkers at a
// time, and waits until they are gone.
func (s *scaleBench) removeNodes(ctx context.Context, names []string) error {
	return parallel(len(names), s.o.createWorkers, func(i int) error { return s.removeNode(ctx, names[i]) })
}

// removeNode deletes a contender's Node and Lease and waits until the Node
// is gone.
func (s *scaleBench) removeNode(ctx context.Context, name string) error {
	_ = s.admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, name, metav1.DeleteOptions{})
	err := s.admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for i := 0; i < 300; i++ {
		if _, err := s.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %s not gone after 30s", name)
}

// cleanup removes a run's pods (grace 0: the contender is stopped already),
// its namespace and its nodes.
func (s *scaleBench) cleanup(ns string, nodes []string) error {
	ctx := context.Background()
	var names []string
	cont := ""
	for {
		l, err := s.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 2000, Continue: cont})
		if err != nil {
			return fmt.Errorf("cleanup: %w", err)
		}
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	err := parallel(len(names), s.o.createWorkers, func(i int) error {
		err := s.admin.CoreV1().Pods(ns).Delete(ctx, names[i], metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	_ = s.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	return s.removeNodes(ctx, nodes)
}

// createAll creates the pods, createWorkers at a time, names[i] bound to
// bound[i]. For the floor, each worker then PATCHes its pod's status
// Running, as a kubelet would write it, with the contenders' identity.
func (s *scaleBench) createAll(ctx context.Context, kind, ns string, bound []string, t *tracker, names []string) error {
	hostIP := s.b.env["NODE_IP"]
	return parallel(len(names), s.o.createWorkers, func(i int) error {
		pod := benchPod(names[i])
		pod.Spec.NodeName = bound[i]
		t.set(names[i], func(p *podTimes) { p.createIssued = time.Now() })
		created, err := s.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if kind != "floor" {
			return nil
		}
		patch, err := runningPatch(created, hostIP, fmt.Sprintf("10.%d.%d.%d", 100+i>>16, (i>>8)&0xff, i&0xff), time.Now())
		if err != nil {
			return err
		}
		_, err = s.ident.CoreV1().Pods(ns).Patch(ctx, created.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// runningPatch is the status a kubelet writes for a started pod, as a
// strategic merge patch with the UID as precondition: phase Running, the
// five kubelet conditions, every container running and ready, IPs, start
// time, QoS class.
func runningPatch(p *v1.Pod, hostIP, podIP string, now time.Time) ([]byte, error) {
	ts := metav1.NewTime(now)
	st := v1.PodStatus{
		Phase:     v1.PodRunning,
		HostIP:    hostIP,
		HostIPs:   []v1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []v1.PodIP{{IP: podIP}},
		StartTime: &ts,
		QOSClass:  v1.PodQOSBestEffort,
	}
	for _, ct := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		st.Conditions = append(st.Conditions, v1.PodCondition{Type: ct, Status: v1.ConditionTrue, LastTransitionTime: ts})
	}
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "floor://" + c.Image, ContainerID: "floor://" + string(p.UID) + "/" + c.Name,
			Ready: true, Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ts}},
		})
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID}, "status": st})
}

// ---- the contenders' processes -------------------------------------------

type scaleProc struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

func (p *scaleProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM, then SIGKILL after 15 s.
func (p *scaleProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func startProc(args, env []string, logPath string) (*scaleProc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &scaleProc{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.exited) }()
	return p, nil
}

// startContender starts kind's process (none for the floor) with the nodes
// named (one process for all of them; Virtual Kubelet takes one); the
// caller waits for them to be Ready.
func (s *scaleBench) startContender(ctx context.Context, kind string, nodes []string, tag string) (*scaleProc, error) {
	dir := filepath.Join(s.b.opt.workDir, "scale", tag)
	unmountUnder(dir)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(s.b.opt.workDir, "scale", tag+".log")
	env := s.b.env
	switch kind {
	case "floor":
		// Nodes for the pods to be bound to (the pod garbage collector
		// deletes pods of nodes that do not exist), Ready once.
		return nil, parallel(len(nodes), s.o.createWorkers, func(i int) error {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i], Labels: map[string]string{"kubernetes.io/hostname": nodes[i]}}}
			if _, err := s.admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				return err
			}
			now := metav1.Now()
			patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "Floor", LastHeartbeatTime: now, LastTransitionTime: now}}}})
			_, err := s.admin.CoreV1().Nodes().PatchStatus(ctx, nodes[i], patch)
			return err
		})
	case "ours":
		ports, err := freePorts(len(nodes) + 1)
		if err != nil {
			return nil, err
		}
		healthz := ports[len(nodes)]
		cfg := oursConfig(nodes, ports, s.o.oursTop, s.o.oursNode)
		cfgPath := filepath.Join(dir, "virtual-nodes.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		args := []string{s.b.opt.ours, "--kubeconfig", s.o.contenderKubeconfig, "--virtual-nodes-config", cfgPath,
			"--root-dir", filepath.Join(dir, "root"), "--healthz-port", fmt.Sprint(healthz), "--node-ip", env["NODE_IP"]}
		return startProc(args, nil, logPath)
	case "vk":
		if len(nodes) != 1 {
			return nil, fmt.Errorf("Virtual Kubelet runs one node per process, not %d", len(nodes))
		}
		nodeName := nodes[0]
		port, err := framework.FreeTCPPort()
		if err != nil {
			return nil, err
		}
		metrics, err := framework.FreeTCPPort()
		if err != nil {
			return nil, err
		}
		// The mock provider's configuration file is required: an entry for
		// the node without settings gives its defaults.
		pcfg := filepath.Join(dir, "mock.json")
		if err := os.WriteFile(pcfg, []byte(fmt.Sprintf("{%q: {}}\n", nodeName)), 0o644); err != nil {
			return nil, err
		}
		// Its kubelet API needs a serving certificate: the cluster's.
		return startProc([]string{s.o.vk, "--provider", "mock", "--provider-config", pcfg, "--nodename", nodeName,
			"--kubeconfig", s.o.contenderKubeconfig, "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", metrics)},
			[]string{"KUBELET_PORT=" + fmt.Sprint(port), "VKUBELET_POD_IP=" + env["NODE_IP"],
				"APISERVER_CERT_LOCATION=" + env["KUBELET_TLS_CERT_FILE"], "APISERVER_KEY_LOCATION=" + env["KUBELET_TLS_KEY_FILE"]}, logPath)
	case "kwok":
		// KWOK simulates nodes that exist: the Nodes are created with the
		// annotation its configuration selects; one process plays them all.
		err := parallel(len(nodes), s.o.createWorkers, func(i int) error {
			n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i],
				Labels:      map[string]string{"kubernetes.io/hostname": nodes[i], "type": "kwok"},
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
			_, err := s.admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return nil, err
		}
		return startProc([]string{s.o.kwok, "--kubeconfig", s.o.contenderKubeconfig, "--config", s.o.kwokCfg,
			"--node-ip", env["NODE_IP"]}, []string{"HOME=" + dir}, logPath)
	}
	return nil, fmt.Errorf("unknown contender %q", kind)
}

// oursConfig is our kubelet's VirtualNodes file: realNode false, one mock
// node per name on its port (ports[i]), the mock provider and the engine
// with their defaults; only what a virtual-only process needs is set.
// identity: shared, so its requests go through the contenders' identity
// (and its flow schema) like the others'. top and node are lines added at
// the top level and to every node (-ours-config-top, -ours-config-node).
func oursConfig(nodes []string, ports []int, top, node string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nrealNode: false\ninstance: gokubelet-bench-scale\n%snodes:\n",
		indentLines(top, ""))
	for i, name := range nodes {
		fmt.Fprintf(&sb, "- name: %s\n  provider: mock\n  port: %d\n  identity: shared\n%s", name, ports[i], indentLines(node, "  "))
	}
	return sb.String()
}

// freePorts are n distinct free TCP ports: all held open until the last is
// found, so that none is handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ---- the report -----------------------------------------------------------

var scaleFigs = []figure{
	{"rate", "pods / s (create → Running, through a watch)"},
	{"batch", "whole batch (s)"},
	{"p50", "per-pod p50 (s)"},
	{"p99", "per-pod p99 (s)"},
	{"done", "pods Running (watch)"},
	{"complete", "pods with a complete Running status (list)"},
	{"reqs", "API requests / pod (the contender's identity)"},
	{"cpu", "process CPU (s)"},
	{"hwm", "process peak RSS (MiB)"},
	{"rss", "process RSS, all Running (MiB)"},
	{"rss_idle", "process RSS, node(s) Ready, no pods (MiB)"},
	{"mem_pod", "RSS per virtual pod (KiB): (all Running − no pods) / pods"},
	{"cp_cpu", "kube-apiserver + etcd CPU (s)"},
}

// scaleDiagFigs say where the time went.
var scaleDiagFigs = []figure{
	{"created", "last pod created, as seen through the watch (s)"},
	{"patch_ms", "PATCH pods/status, mean server-side latency (ms)"},
	{"wait_ms", "the contender's mean wait in API Priority and Fairness queues (ms)"},
	{"terminated", "pod watches the API server closed for falling behind (any client)"},
	{"drv_cpu", "the driver's CPU (s)"},
	{"other_cpu", "CPU of everything else on the machine (s)"},
}

// oursChanges describes what the run changed in our kubelet's file.
func (s *scaleBench) oursChanges() string {
	var parts []string
	for _, l := range []string{s.o.oursTop, s.o.oursNode} {
		if t := strings.TrimSpace(l); t != "" {
			parts = append(parts, "`"+strings.ReplaceAll(t, "\n", "; ")+"`")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", except: " + strings.Join(parts, ", ")
}

func (s *scaleBench) kindLabel(kind string) string {
	switch kind {
	case "floor":
		return "floor (driver PATCHes)"
	case "ours":
		return "ours (mock)"
	case "vk":
		return "Virtual Kubelet " + s.o.vkVersion + " (mock)"
	case "kwok":
		return "KWOK " + s.o.kwokVersion
	}
	return kind
}

func (s *scaleBench) table(z scaleSize) string { return s.tableOf(z, scaleFigs, true) }

func (s *scaleBench) tableOf(z scaleSize, figs []figure, withRatios bool) string {
	wl, kinds := z.wl(), s.kindsAt(z)
	var sb strings.Builder
	sb.WriteString("| figure |")
	for _, k := range kinds {
		sb.WriteString(" " + s.kindLabel(k) + " |")
	}
	var ratios []string
	for _, k := range kinds {
		if k != "ours" && withRatios {
			ratios = append(ratios, k)
		}
	}
	for _, k := range ratios {
		fmt.Fprintf(&sb, " ours/%s |", k)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)+len(ratios)) + "\n")
	for _, f := range figs {
		fmt.Fprintf(&sb, "| %s |", f.label)
		for _, k := range kinds {
			fmt.Fprintf(&sb, " %s |", FormatSpread(s.b.res.get(k, wl, f.key)))
		}
		for _, k := range ratios {
			r := "–"
			if f.key != "done" && f.key != "complete" {
				r = FormatSpread(PairedRatios(s.b.res.get("ours", wl, f.key), s.b.res.get(k, wl, f.key)))
			}
			fmt.Fprintf(&sb, " %s |", r)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// scaleGoal is the least share of the floor's pods/s ours must reach.
const scaleGoal = 0.8

// floorCheck compares ours with the floor round by round (paired): the
// ratios, the lowest, and whether that is at least scaleGoal. Without a
// pair the lowest is NaN and the check fails.
func floorCheck(ours, floor []float64) (ratios []float64, lowest float64, ok bool) {
	ratios = PairedRatios(ours, floor)
	if len(ratios) == 0 {
		return nil, math.NaN(), false
	}
	lowest, _ = MinMax(ratios)
	return ratios, lowest, lowest >= scaleGoal
}

// verdict checks the acceptance at a size: ours at least 0.8× the floor's
// rate and above every other contender's, in every round, with every
// status complete.
func (s *scaleBench) verdict(z scaleSize) string {
	wl, n := z.wl(), z.pods()
	ours := s.b.res.get("ours", wl, "rate")
	if len(ours) == 0 {
		return "no run of ours: no verdict"
	}
	var fails, passes []string
	if fl := s.b.res.get("floor", wl, "rate"); len(fl) > 0 {
		ratios, lo, ok := floorCheck(ours, fl)
		msg := fmt.Sprintf("ours/floor %s (lowest round %s; at least %s wanted)", FormatSpread(ratios), FormatNum(lo), FormatNum(scaleGoal))
		if ok {
			passes = append(passes, msg)
		} else {
			fails = append(fails, msg)
		}
	}
	for _, k := range []string{"vk", "kwok"} {
		if !runsAt(k, z) {
			continue
		}
		other := s.b.res.get(k, wl, "rate")
		if len(other) == 0 {
			continue
		}
		lo, _ := MinMax(PairedRatios(ours, other))
		msg := fmt.Sprintf("ours/%s %s (lowest round %s; above 1 wanted)", k, FormatSpread(PairedRatios(ours, other)), FormatNum(lo))
		if lo > 1 {
			passes = append(passes, msg)
		} else {
			fails = append(fails, msg)
		}
	}
	lo, _ := MinMax(s.b.res.get("ours", wl, "complete"))
	msg := fmt.Sprintf("ours: %s of %d pods with a complete Running status in the worst round", FormatNum(lo), n)
	if lo == float64(n) {
		passes = append(passes, msg)
	} else {
		fails = append(fails, msg)
	}
	if len(fails) == 0 {
		return "**holds**: " + strings.Join(passes, "; ") + "."
	}
	return "**does not hold**: " + strings.Join(fails, "; ") + ". (Met: " + strings.Join(passes, "; ") + ".)"
}

func (s *scaleBench) report() string {
	o := s.o
	sizes := scaleSizes(o)
	var sb strings.Builder
	begin, end := sectionMarkers("scale")
	fmt.Fprintf(&sb, "%s\n## Scale: virtual nodes, pods created at once\n\n", begin)
	fmt.Fprintf(&sb, "Written by `make bench-scale` (hack/bench.sh with BENCH_MODE=scale, test/bench/scale.go) on %s, "+
		"our commit %s, in %s on this machine (%d CPUs): ", time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		s.b.opt.commit, s.wall.Round(time.Second), runtime.NumCPU())
	var what []string
	for _, z := range sizes {
		rounds := "one round"
		if z.rounds > 1 {
			rounds = fmt.Sprintf("%d rounds", z.rounds)
		}
		what = append(what, fmt.Sprintf("%s, %s", z, rounds))
	}
	sb.WriteString(strings.Join(what, "; then ") + ".\n\n")
	if g := s.goal(sizes); g != "" {
		sb.WriteString(g + "\n\n")
	}
	multi := 0
	for _, z := range sizes {
		multi = max(multi, z.nodes)
	}
	vkNote := ""
	if multi > 1 {
		vkNote = fmt.Sprintf(" Virtual Kubelet serves one node per process: %d of its processes (see Memory for one) "+
			"do not fit this machine beside the control plane, so it runs at the one-node sizes only.", multi)
	}
	fmt.Fprintf(&sb, `Method:

- One local control plane (`+"`hack/cluster.sh up`"+`, CLUSTER_NODE=0: etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler; the machine's own node stopped). Contenders run one
  after another in each round, in the order %s, each with fresh nodes of its own
  (`+"`scale-<contender>`"+` alone, `+"`scale-<contender>-00`"+`… with several) and a fresh namespace; between them the contender is stopped, its pods
  deleted with grace period 0, its namespace, Nodes and Leases deleted.%s
- Pods: one container, no service-account token, `+"`spec.nodeName`"+` set (no scheduler; with N
  nodes pod i goes to node i mod N, so each gets the same number), created
  by the driver as cluster admin, %d create calls in flight at a time, with a protobuf client
  without a client-side rate limit. A pod counts as Running at the arrival of the first event of
  the driver's watch (on a connection of its own) showing every container running (driver clock). Pods/s: pods Running over the time from the first
  create call to the last pod Running; a contender that has not finished within %s is
  stopped there and its rate is the pods Running over that time (noted below; its requests are
  counted per pod it ran).
- Every contender's own requests go through one identity, `+"`gokubelet:virtual-nodes`"+`
  (`+"`hack/virtual-nodes.sh creds`"+`, plus the pod and event verbs KWOK needs, in
  `+"`hack/bench-scale.yaml`"+`), whose API Priority and Fairness flow schema `+"`%s`"+` (same
  priority level as before, global-default) counts them: API requests / pod is the increase of
  `+"`apiserver_flowcontrol_dispatched_requests_total`"+` for it over the window (from before the
  first create to 3 s after the last pod Running), divided by the pods Running. The breakdown below is the
  increase of `+"`apiserver_request_total`"+` over the same window for everyone but the driver's
  creates (so it includes the control plane's own background requests).
- Process CPU (utime+stime) and peak RSS (VmHWM, reset through clear_refs at the window's start)
  from /proc of the contender's process over the window; RSS at the window's end. kube-apiserver
  + etcd CPU over the same window shows what each contender costs the control plane.
- Memory (VmRSS of the contender's process): *RSS, node(s) Ready, no pods* is read at the
  window's start, once every node of the contender is Ready and 3 s more have passed, before
  the first create; *RSS, all Running* at the window's end. **Per virtual pod** = (RSS all
  Running − RSS no pods) / pods Running, in the same run: all the pods added, Go heap headroom
  included (a Go process lets its heap grow to about twice what is live before collecting, and
  gives memory back to the system lazily), so it bounds what a pod costs from above rather than
  giving the size of its objects. **Per virtual node** = (RSS with N nodes Ready and no pods −
  RSS of the same contender's process with one node Ready and no pods, the median over the
  rounds of the first one-node size) / (N − 1): what each node beyond the first adds to one
  process. Virtual Kubelet serves one node per process, so a node costs it a whole process:
  its figure is the RSS of its one-node process, Ready with no pods.
- Contenders:
  - **floor**: no kubelet. The driver registers the Nodes itself (Ready once) and, right after each create returns, PATCHes that pod's
    status to Running (phase, the five kubelet conditions, container running and ready, IPs,
    start time, QoS class; the UID as precondition) with the contenders' identity and no rate
    limit: the most this API server carries for creating and starting pods.
  - **ours**: one `+"`kubelet --virtual-nodes-config`"+` process with `+"`realNode: false`"+` and every node
    in its file (provider `+"`mock`"+`, a port each, `+"`identity: shared`"+`), every setting at its default (engine, mock provider, API client)%s.
  - **Virtual Kubelet %s**: its own command (`+"`cmd/virtual-kubelet`"+`, built from the Go module
    proxy by `+"`hack/build-contenders.sh`"+`) with `+"`--provider mock`"+` and a provider
    configuration that names the node without settings (its defaults), everything else at its
    defaults (among them client-go's 5 QPS, burst 10, and 10 pod sync workers); only its ports
    and the serving certificate its kubelet API requires are set. One node per process.
  - **KWOK %s**: `+"`cmd/kwok`"+` (built the same way) with the configuration of its in-cluster
    install (`+"`kustomize/kwok/kwok.yaml`"+`) and its default "fast" stages given in that file
    rather than as Stage objects (so no CRDs are installed): no client-side rate limit, 4 pod
    stages played in parallel; the driver creates its Nodes with the annotation that
    configuration selects, and one process plays them all.
- Every cell: median over rounds [min–max]; ratios are paired per round.

`, strings.Join(o.kinds, ", "), vkNote, o.createWorkers, s.timeouts(sizes), scaleFlowSchema, s.oursChanges(), o.vkVersion, o.kwokVersion)
	for _, z := range sizes {
		wl := z.wl()
		fmt.Fprintf(&sb, "### %s\n\n%s\nWhere the time went (same windows):\n\n%s\n", z, s.table(z), s.tableOf(z, scaleDiagFigs, false))
		var above []string
		for _, k := range []string{"vk", "kwok"} {
			if runsAt(k, z) {
				above = append(above, map[string]string{"vk": "Virtual Kubelet", "kwok": "KWOK"}[k])
			}
		}
		fmt.Fprintf(&sb, "Acceptance (ours ≥ 0.8× the floor, above %s, every status complete): %s\n\n", strings.Join(above, " and "), s.verdict(z))
		sb.WriteString("API requests by verb and resource, per pod (`apiserver_request_total`, last round, driver's creates excluded):\n\n")
		for _, k := range s.kindsAt(z) {
			if b := s.breakdown[k][wl]; b != "" {
				fmt.Fprintf(&sb, "- %s: %s\n", s.kindLabel(k), b)
			}
		}
		sb.WriteString("\n")
		var notes []string
		for _, k := range s.kindsAt(z) {
			for _, msg := range s.notes[k][wl] {
				notes = append(notes, fmt.Sprintf("- %s: %s", s.kindLabel(k), msg))
			}
		}
		if len(notes) > 0 {
			sb.WriteString("Notes:\n\n" + strings.Join(notes, "\n") + "\n\n")
		}
	}
	if m := s.memoryTable(sizes); m != "" {
		sb.WriteString("### Memory\n\nPer virtual pod and per virtual node, as the method says (medians over rounds [min–max]):\n\n" + m + "\n")
	}
	var fails []string
	for _, f := range s.b.fails {
		fails = append(fails, "- "+strings.ReplaceAll(f, "\n", " "))
	}
	if len(fails) > 0 {
		sb.WriteString("Failed runs (their figures are missing above):\n\n" + strings.Join(fails, "\n") + "\n\n")
	}
	sb.WriteString(end + "\n")
	return sb.String()
}

// goal is the acceptance over the sizes it names (z.goal): ours at
// least scaleGoal× the floor's pods/s at each; "" when none ran.
func (s *scaleBench) goal(sizes []scaleSize) string {
	var parts []string
	holds, any := true, false
	for _, z := range sizes {
		if !z.goal {
			continue
		}
		any = true
		ours, fl := s.b.res.get("ours", z.wl(), "rate"), s.b.res.get("floor", z.wl(), "rate")
		_, lo, ok := floorCheck(ours, fl)
		if math.IsNaN(lo) {
			holds = false
			parts = append(parts, fmt.Sprintf("%s: no run of both ours and the floor", z))
			continue
		}
		msg := fmt.Sprintf("%s: ours %s pods/s, floor %s, ours/floor %s", z, FormatSpread(ours), FormatSpread(fl), FormatNum(lo))
		if !ok {
			holds = false
			msg += fmt.Sprintf(" (%s below %s: ours needs %.0f%% more pods/s)", FormatNum(scaleGoal-lo), FormatNum(scaleGoal), 100*(scaleGoal/lo-1))
		}
		parts = append(parts, msg)
	}
	if !any {
		return ""
	}
	head := "**Goal** (ours at least 0.8× the floor's pods/s at each of these sizes, lowest round): "
	if holds {
		return head + "**holds**: " + strings.Join(parts, "; ") + "."
	}
	return head + "**does not hold**: " + strings.Join(parts, "; ") + "."
}

// memoryTable: for each contender with a process, its RSS with one node and
// with N, per virtual node and per virtual pod at each size (the method
// gives the formulas).
func (s *scaleBench) memoryTable(sizes []scaleSize) string {
	var kinds []string
	for _, k := range s.o.kinds {
		if k != "floor" {
			kinds = append(kinds, k)
		}
	}
	var base, multi *scaleSize
	for i := range sizes {
		if sizes[i].nodes == 1 && base == nil {
			base = &sizes[i]
		}
		if sizes[i].nodes > 1 && multi == nil {
			multi = &sizes[i]
		}
	}
	if len(kinds) == 0 || base == nil {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("| figure |")
	for _, k := range kinds {
		sb.WriteString(" " + s.kindLabel(k) + " |")
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)) + "\n")
	row := func(label string, cell func(k string) string) {
		fmt.Fprintf(&sb, "| %s |", label)
		for _, k := range kinds {
			fmt.Fprintf(&sb, " %s |", cell(k))
		}
		sb.WriteString("\n")
	}
	idle := func(k string, z *scaleSize) []float64 { return s.b.res.get(k, z.wl(), "rss_idle") }
	row(fmt.Sprintf("RSS, 1 node Ready, no pods (MiB; %s)", base), func(k string) string { return FormatSpread(idle(k, base)) })
	if multi != nil {
		row(fmt.Sprintf("RSS, %d nodes Ready, no pods (MiB)", multi.nodes), func(k string) string {
			if !runsAt(k, *multi) {
				return "– (not run)"
			}
			return FormatSpread(idle(k, multi))
		})
	}
	row("**per virtual node** (MiB)", func(k string) string {
		if multi == nil || !runsAt(k, *multi) {
			if k == "vk" {
				return FormatNum(Median(idle(k, base))) + " (its one-node process)"
			}
			return "–"
		}
		return FormatNum(PerNodeMiB(Median(idle(k, multi)), Median(idle(k, base)), multi.nodes))
	})
	for _, z := range sizes {
		row(fmt.Sprintf("**per virtual pod**, %s (KiB)", z), func(k string) string {
			if !runsAt(k, z) {
				return "– (not run)"
			}
			return FormatSpread(s.b.res.get(k, z.wl(), "mem_pod"))
		})
	}
	return sb.String()
}

// writeTimes leaves each pod's times (seconds from the first create) for
// a closer look at a run: create issued, first watch event, Running.
func writeTimes(path string, names []string, ts []podTimes) {
	var first time.Time
	for _, p := range ts {
		if first.IsZero() || (!p.createIssued.IsZero() && p.createIssued.Before(first)) {
			first = p.createIssued
		}
	}
	rel := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmt.Sprintf("%.4f", t.Sub(first).Seconds())
	}
	var sb strings.Builder
	sb.WriteString("pod,create_issued,first_event,running\n")
	for i, p := range ts {
		fmt.Fprintf(&sb, "%s,%s,%s,%s\n", names[i], rel(p.createIssued), rel(p.scheduled), rel(p.running))
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		logf("times: %v", err)
	}
}

// indentLines indents every non-empty line of s and ends it with a newline
// ("" stays "").
func indentLines(s, indent string) string {
	var out strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out.WriteString(indent + l + "\n")
		}
	}
	return out.String()
}

// timeouts says how long a contender may take at each size.
func (s *scaleBench) timeouts(sizes []scaleSize) string {
	var parts []string
	for _, z := range sizes {
		parts = append(parts, fmt.Sprintf("%s at %s", fmtDur(s.scaleTimeout(z.pods())), z))
	}
	return strings.Join(parts, ", ")
}

func fmtDur(d time.Duration) string { return d.Round(time.Second).String() }

// PerPodKiB is the RSS a run's pods added, per pod (KiB): running and idle
// in KiB; NaN without pods.
func PerPodKiB(runningKB, idleKB uint64, pods int) float64 {
	if pods <= 0 {
		return math.NaN()
	}
	return (float64(runningKB) - float64(idleKB)) / float64(pods)
}

// PerNodeMiB is what each node beyond the first adds to one process: the
// idle RSS with n nodes less that with one, over n-1 (MiB); NaN for fewer
// than two nodes or a missing figure.
func PerNodeMiB(idleN, idle1 float64, n int) float64 {
	if n < 2 || math.IsNaN(idleN) || math.IsNaN(idle1) {
		return math.NaN()
	}
	return (idleN - idle1) / float64(n-1)
}

// ---- pure helpers (stats_test.go) ---------------------------------------------

// RequestCounts sums apiserver_request_total by "VERB resource[/subresource]"
// from a Prometheus text exposition.
func RequestCounts(metrics string) map[string]float64 {
	const name = "apiserver_request_total{"
	out := map[string]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.IndexByte(line, '}')
		if end < 0 {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(line[end+1:]), &v); err != nil {
			continue
		}
		l := parseLabels(line[len(name):end])
		key := l["verb"] + " " + l["resource"]
		switch {
		case l["resource"] == "":
			key = l["verb"] + " (non-resource)"
		case l["subresource"] != "":
			key += "/" + l["subresource"]
		}
		out[key] += v
	}
	return out
}

// SumSamples sums the samples of a metric (name with its _sum/_count
// suffix) whose labels include every pair of match.
func SumSamples(metrics, name string, match map[string]string) float64 {
	var sum float64
	// A sample that is not a number counts as nothing here.
	_ = eachSample(metrics, name, func(l map[string]string, v float64) {
		for k, want := range match {
			if l[k] != want {
				return
			}
		}
		sum += v
	})
	return sum
}

// ParseMachineBusy returns the busy CPU time (clock ticks: all but idle and
// iowait) of the machine from /proc/stat.
func ParseMachineBusy(stat string) (uint64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat: %q", line)
	}
	var busy uint64
	for i, x := range f[1:] {
		var v uint64
		if _, err := fmt.Sscan(x, &v); err != nil {
			return 0, fmt.Errorf("malformed /proc/stat: %q", line)
		}
		// user nice system idle iowait irq softirq steal guest guest_nice:
		// idle and iowait are not busy; guest time is already in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += v
	}
	return busy, nil
}

// DiffCounts is after-before per key (keys only in after count from 0).
func DiffCounts(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// FormatBreakdown lists the counts per pod, largest first, those of at
// least 0.01 per pod, without the excluded keys.
func FormatBreakdown(d map[string]float64, pods int, exclude []string) string {
	skip := map[string]bool{}
	for _, e := range exclude {
		skip[e] = true
	}
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k, v := range d {
		if !skip[k] && v/float64(pods) >= 0.01 {
			l = append(l, kv{k, v / float64(pods)})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	if len(l) == 0 {
		return "none above 0.01"
	}
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = fmt.Sprintf("%s %s", e.k, FormatNum(e.v))
	}
	return strings.Join(parts, ", ")
}
