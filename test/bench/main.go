// Command bench runs the same pod workloads against our kubelet and the
// upstream kubelet, alternating, on one containerd with one node identity of
// the local cluster, plus a floor driven straight through CRI, and writes
// docs/benchmarks.md. hack/bench.sh prepares everything and runs it; see
// docs/benchmarks.md for the method.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
	"github.com/gokubelet/kubelet/test/framework"
)

type options struct {
	ours, upstream string
	rounds         int
	criEndpoint    string
	clusterDir     string
	// clusterRunDir holds the control plane's pid files (machine.go).
	clusterRunDir string
	out           string
	workDir       string
	verbosity     int
	commit        string
	batchSmall    int
	batchLarge    int
	streamN       int
	streamEvery   time.Duration
	settleIdle    time.Duration
	// floorSlots is the floor's start gate: the kubelet's limit
	// (startgate.DefaultSlots) by default, 0 for none; floorOnly runs the
	// floor alone (an experiment: no kubelet, no report).
	floorSlots int
	floorOnly  bool
	// quietLimit bounds the wait for a quiet machine before each measured
	// workload (quiet.go); 0 does not wait.
	quietLimit time.Duration
	// The CSI workload (csi.go): upstream's mock CSI driver, pods, interval.
	csiMock  string
	csiPods  int
	csiEvery time.Duration
	// crunHandler, when set, is the runtime handler that runs crun: each
	// round then runs the floor a second time with it.
	crunHandler string
	// cpuProfile > 0 keeps each kubelet's CPU profile over that long from
	// the start of the large batch (a diagnostic, off by default: profiling
	// costs the kubelets a little CPU).
	cpuProfile time.Duration
	// The volumes workload (volumes.go): pods, interval.
	volPods  int
	volEvery time.Duration
	// The exit workload (exit.go): pods, interval of the kills.
	exitPods  int
	exitEvery time.Duration
	// churn > 0 runs the churn workload (our kubelet only) instead of the
	// comparison, and writes only its section of the report.
	churn            int
	churnConcurrency int
	// scale.pods > 0 runs the scale benchmark of virtual nodes instead
	// (scale.go), and writes only its section of the report.
	scale     scaleOptions
	scaleKind string
}

// results[kind][workload][figure] holds one value per round, in round order.
type results map[string]map[string]map[string][]float64

func (r results) add(kind, wl, fig string, v float64) {
	if r[kind] == nil {
		r[kind] = map[string]map[string][]float64{}
	}
	if r[kind][wl] == nil {
		r[kind][wl] = map[string][]float64{}
	}
	r[kind][wl][fig] = append(r[kind][wl][fig], v)
}

func (r results) get(kind, wl, fig string) []float64 { return r[kind][wl][fig] }

type bench struct {
	opt   options
	cs    kubernetes.Interface
	rt    cri.RuntimeService
	env   map[string]string
	res   results
	fails []string
	crun  crunProbe

	churnSamples  []churnSample
	churnFailures []string
	churnWall     time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.ours, "ours", "", "our kubelet binary")
	flag.StringVar(&o.upstream, "upstream", "", "upstream kubelet binary")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds (each: ours, upstream, floor)")
	flag.StringVar(&o.criEndpoint, "cri", "unix:///run/gokubelet/bench/containerd.sock", "CRI endpoint of the bench containerd")
	flag.StringVar(&o.clusterDir, "cluster-dir", "/var/lib/gokubelet/cluster", "hack/cluster.sh state dir")
	flag.StringVar(&o.clusterRunDir, "cluster-run-dir", "/run/gokubelet/cluster", "hack/cluster.sh pid files: the control plane processes whose CPU each workload records")
	flag.StringVar(&o.out, "out", "docs/benchmarks.md", "report to write")
	flag.StringVar(&o.workDir, "work-dir", "/var/lib/gokubelet/bench/run", "kubelet root dirs, configs and logs")
	flag.IntVar(&o.verbosity, "v", 2, "log verbosity of both kubelets")
	flag.StringVar(&o.commit, "commit", "", "our commit, for the report")
	flag.IntVar(&o.batchSmall, "batch-small", 30, "pods in the small batch")
	flag.IntVar(&o.batchLarge, "batch-large", 100, "pods in the large batch (and the churn)")
	flag.IntVar(&o.streamN, "stream", 60, "pods in the steady stream")
	flag.DurationVar(&o.streamEvery, "stream-every", 200*time.Millisecond, "interval of the steady stream")
	flag.StringVar(&o.csiMock, "csi-mock", "", "upstream's mock CSI driver with its registration glue (hack/build-upstream.sh csi-mock), for the CSI workload")
	flag.IntVar(&o.csiPods, "csi-pods", 20, "pods in the CSI workload, each with its own pre-provisioned volume")
	flag.StringVar(&o.crunHandler, "crun-handler", "", "runtime handler of the bench containerd that runs crun (hack/containerd.sh configures \"crun\" when Debian's crun is installed); each round then runs the floor with it too")
	flag.DurationVar(&o.cpuProfile, "cpu-profile", 0, "keep each kubelet's CPU profile over this long from the start of the large batch, as <kind>-r<round>-cpu-batch-large.pb.gz in the work dir (a diagnostic; 0: none)")
	flag.DurationVar(&o.csiEvery, "csi-every", 500*time.Millisecond, "interval of the CSI workload's pods")
	flag.IntVar(&o.volPods, "volumes-pods", 20, "pods in the volumes workload, each with a configMap, a secret, the service-account token and an emptyDir")
	flag.DurationVar(&o.volEvery, "volumes-every", 500*time.Millisecond, "interval of the volumes workload's pods")
	flag.IntVar(&o.exitPods, "exit-pods", 20, "pods in the exit workload, whose containers are killed through CRI")
	flag.DurationVar(&o.exitEvery, "exit-every", 230*time.Millisecond, "interval of the exit workload's kills (not a divisor of the 1 s relist period: the kills land at all its phases)")
	flag.DurationVar(&o.settleIdle, "settle", 10*time.Second, "settle time before the idle RSS with the large batch running")
	flag.DurationVar(&o.quietLimit, "quiet", 30*time.Second, "before each measured workload, wait at most this long for a 2s window with the CPU 75% idle (0: no wait)")
	flag.IntVar(&o.floorSlots, "floor-slots", startgate.DefaultSlots(), "the floor's start gate: at most this many sandbox or container starts at once, oldest pod first, as our kubelet (0: every pod at once)")
	flag.BoolVar(&o.floorOnly, "floor-only", false, "run the floor alone for -rounds rounds and log its figures (an experiment; no kubelet, no report)")
	flag.IntVar(&o.churn, "churn", 0, "run the churn workload with this many pods instead of the comparison (our kubelet only)")
	flag.IntVar(&o.churnConcurrency, "churn-concurrency", 10, "pods alive at once in the churn workload")
	flag.IntVar(&o.scale.pods, "scale", 0, "run the scale benchmark of virtual nodes with this many pods instead of the comparison")
	flag.IntVar(&o.scale.rounds, "scale-rounds", 3, "rounds of the scale benchmark")
	flag.IntVar(&o.scale.large, "scale-large", 0, "then one round with this many pods (0: none)")
	flag.IntVar(&o.scale.nodes, "scale-nodes", 0, "then one round with this many nodes per contender in one process (0: none; Virtual Kubelet sits it out)")
	flag.IntVar(&o.scale.podsPerNode, "scale-pods-per-node", 0, "pods on each of the -scale-nodes nodes (0: none)")
	flag.DurationVar(&o.scale.timeout, "scale-timeout", 0, "time a contender may take (0: max(60s, 12ms per pod))")
	flag.IntVar(&o.scale.createWorkers, "scale-create-workers", 100, "create calls in flight at a time")
	flag.StringVar(&o.scaleKind, "scale-contenders", strings.Join(scaleKinds, ","), "contenders, in the order of a round")
	flag.StringVar(&o.scale.vk, "vk", "", "Virtual Kubelet binary (hack/build-contenders.sh)")
	flag.StringVar(&o.scale.vkVersion, "vk-version", "", "its version, for the report")
	flag.StringVar(&o.scale.kwok, "kwok", "", "KWOK binary (hack/build-contenders.sh)")
	flag.StringVar(&o.scale.kwokCfg, "kwok-config", "", "KWOK configuration with its stages (hack/build-contenders.sh)")
	flag.StringVar(&o.scale.kwokVersion, "kwok-version", "", "its version, for the report")
	flag.StringVar(&o.scale.contenderKubeconfig, "contender-kubeconfig", "/var/lib/gokubelet/cluster/virtual-nodes.kubeconfig", "the contenders' identity (hack/virtual-nodes.sh creds)")
	flag.StringVar(&o.scale.oursTop, "ours-config-top", "", "lines added at the top level of our kubelet's VirtualNodes file (scale)")
	flag.StringVar(&o.scale.oursNode, "ours-config-node", "", "lines added to its node (scale), e.g. \"podSync: {workers: 100}\"")
	logsBench := flag.String("logs-bench", "", "write docs' logs section from this `go test -bench BenchmarkTail` output instead of benchmarking kubelets")
	flag.Parse()
	if *logsBench != "" {
		if err := writeLogsSection(*logsBench, o.out, o.commit); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	o.scale.kinds = strings.Split(o.scaleKind, ",")
	if o.scale.nodes == 1 && o.scale.podsPerNode > 0 {
		fmt.Fprintln(os.Stderr, "bench: -scale-nodes 1 is -scale or -scale-large; several nodes want at least 2")
		os.Exit(2)
	}
	if o.ours == "" || (o.upstream == "" && o.churn == 0 && o.scale.pods == 0) {
		fmt.Fprintln(os.Stderr, "bench: -ours and -upstream are required")
		os.Exit(2)
	}
	if o.upstream != "" && o.churn == 0 && o.scale.pods == 0 && o.csiMock == "" {
		fmt.Fprintln(os.Stderr, "bench: -csi-mock is required for the comparison (its CSI workload)")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// kubeletOrder is the order of the two kubelets in a round: ours first in
// odd rounds, upstream first in even ones, so that any effect of going
// first (right after the previous round's floor and its clear, or the
// start) falls on each in turn. Side-by-side runs of two builds of ours on
// 2026-11-29 showed one: at 100 pods, over five rounds, the p50 from the
// first ADD to the container started averaged 106 s in the first slot and
// 83 s in the second, whichever build ran there.
func kubeletOrder(round int) []string {
	if round%2 == 0 {
		return []string{"upstream", "ours"}
	}
	return []string{"ours", "upstream"}
}

// quiet waits for a quiet machine before a measured workload (quiet.go).
func (b *bench) quiet(ctx context.Context, what string) {
	if b.opt.quietLimit > 0 {
		waitQuiet(ctx, what, 2*time.Second, b.opt.quietLimit)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(o options) error {
	env, err := framework.ReadClusterEnv(filepath.Join(o.clusterDir, "kubelet-env"))
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(o.clusterDir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	// High enough that the driver is never the bottleneck.
	rc.QPS, rc.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if o.scale.pods > 0 {
		// No container runtime: virtual nodes only.
		if err := os.MkdirAll(o.workDir, 0o755); err != nil {
			return err
		}
		b := &bench{opt: o, cs: cs, env: env, res: results{}}
		s, err := newScaleBench(b, o.scale)
		if err != nil {
			return err
		}
		if err := s.run(); err != nil {
			return err
		}
		section := s.report()
		fmt.Println(section)
		old, _ := os.ReadFile(o.out)
		return os.WriteFile(o.out, []byte(withSection(string(old), "scale", section)), 0o644)
	}
	rt, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(o.criEndpoint).WithConnectionTimeout(30 * time.Second).WithTracerProvider(nil).Build(context.Background())
	if err != nil {
		return err
	}
	ver, err := rt.Version(context.Background(), "")
	if err != nil {
		return fmt.Errorf("CRI %s: %w", o.criEndpoint, err)
	}
	if err := os.MkdirAll(o.workDir, 0o755); err != nil {
		return err
	}
	b := &bench{opt: o, cs: cs, rt: rt, env: env, res: results{}}
	if o.churn > 0 {
		logf("churn: %d pods, %d at a time", o.churn, o.churnConcurrency)
		if err := b.runChurn(); err != nil {
			return err
		}
		_ = cs.CoreV1().Nodes().Delete(context.Background(), env["NODE_NAME"], metav1.DeleteOptions{})
		section := b.churnReport()
		fmt.Println(section)
		old, _ := os.ReadFile(o.out)
		return os.WriteFile(o.out, []byte(withChurnSection(string(old), section)), 0o644)
	}
	if o.crunHandler != "" {
		b.crun = probeCrun(context.Background(), rt, o.crunHandler, filepath.Join(o.workDir, "floor-logs"))
		logf("crun: %s", b.crun.note)
		if !b.crun.runs {
			o.crunHandler = ""
		}
	}
	// The runtime without an event stream of the relist-only runs.
	proxy, err := startNoEventsProxy(filepath.Join(o.workDir, "cri-noevents.sock"), o.criEndpoint)
	if err != nil {
		return err
	}
	defer proxy.Stop()
	if o.floorOnly {
		return b.floorOnly()
	}
	start := time.Now()
	for r := 1; r <= o.rounds; r++ {
		for _, kind := range kubeletOrder(r) {
			logf("round %d: %s kubelet", r, kind)
			if err := b.runKubelet(kind, r); err != nil {
				logf("round %d %s FAILED: %v", r, kind, err)
				b.fails = append(b.fails, fmt.Sprintf("round %d, %s: %v", r, kind, err))
			}
		}
		logf("round %d: our kubelet, relist only (exit workload, runtime without events)", r)
		if err := b.runRelistOnly(r, proxy); err != nil {
			logf("round %d %s FAILED: %v", r, kindRelist, err)
			b.fails = append(b.fails, fmt.Sprintf("round %d, %s: %v", r, kindRelist, err))
		}
		logf("round %d: floor (CRI)", r)
		if err := b.runFloorRound("floor", ""); err != nil {
			logf("round %d floor FAILED: %v", r, err)
			b.fails = append(b.fails, fmt.Sprintf("round %d, floor: %v", r, err))
		}
		if o.crunHandler != "" {
			logf("round %d: floor (CRI) with the runtime handler %s", r, o.crunHandler)
			if err := b.runFloorRound("floor-crun", o.crunHandler); err != nil {
				logf("round %d floor with %s FAILED: %v", r, o.crunHandler, err)
				b.fails = append(b.fails, fmt.Sprintf("round %d, floor with %s: %v", r, o.crunHandler, err))
			}
		}
	}
	_ = clearRuntime(context.Background(), rt)
	_ = cs.CoreV1().Nodes().Delete(context.Background(), env["NODE_NAME"], metav1.DeleteOptions{})
	info := b.machineInfo(ver.RuntimeName+" "+ver.RuntimeVersion, time.Since(start))
	table := b.table()
	fmt.Println(table)
	// The churn and scale sections (make bench-churn, make bench-scale) stay.
	old, _ := os.ReadFile(o.out)
	doc := keepSections(b.report(info, table), string(old))
	return os.WriteFile(o.out, []byte(doc), 0o644)
}

// nodeFlows counts the API requests made with the node's identity, from the
// API server's own APF metrics.
func (b *bench) nodeFlows(ctx context.Context) float64 {
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		logf("metrics: %v", err)
		return math.NaN()
	}
	v, err := SumDispatched(string(raw), NodeFlowSchemas)
	if err != nil {
		logf("metrics: %v", err)
		return math.NaN()
	}
	return v
}

// window measures the kubelet's CPU, peak RSS and API requests around f,
// and the machine's and the control plane's CPU.
type window struct {
	b     *bench
	pid   int
	p0    procSample
	m0    machineSample
	reqs0 float64
}

func (b *bench) openWindow(ctx context.Context, pid int) *window {
	_ = resetPeakRSS(pid)
	w := &window{b: b, pid: pid, reqs0: b.nodeFlows(ctx)}
	w.p0, _ = readProc(pid)
	w.m0 = readMachine(b.opt.clusterRunDir)
	return w
}

func (w *window) close(ctx context.Context, kind, wl string, pods int) procSample {
	p1, err := readProc(w.pid)
	if err != nil {
		logf("proc: %v", err)
	}
	w.b.recordMachine(kind, wl, w.m0, readMachine(w.b.opt.clusterRunDir))
	reqs := w.b.nodeFlows(ctx)
	w.b.res.add(kind, wl, "cpu", float64(p1.cpuTicks-w.p0.cpuTicks)/clockTicks)
	w.b.res.add(kind, wl, "hwm", float64(p1.hwmKB)/1024)
	w.b.res.add(kind, wl, "reqs", (reqs-w.reqs0)/float64(pods))
	return p1
}

func (b *bench) recordStartup(kind, wl string, ts []podTimes) {
	lat, batch := startupFigures(ts)
	s := Summarize(lat)
	b.res.add(kind, wl, "p50", s.P50)
	b.res.add(kind, wl, "p90", s.P90)
	b.res.add(kind, wl, "p99", s.P99)
	b.res.add(kind, wl, "max", s.Max)
	b.res.add(kind, wl, "batch", batch)
	sched, status, running := phaseFigures(ts)
	b.res.add(kind, wl, "ph_sched", Median(sched))
	b.res.add(kind, wl, "ph_status", Median(status))
	b.res.add(kind, wl, "ph_running", Median(running))
}

func (b *bench) waitNode(ctx context.Context, timeout time.Duration) error {
	name := b.env["NODE_NAME"]
	deadline := time.Now().Add(timeout)
	for {
		n, err := b.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		last := fmt.Sprint(err)
		if err == nil {
			ready := nodeReady(n)
			tainted := false
			for _, t := range n.Spec.Taints {
				if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
					tainted = true
				}
			}
			if ready && !tainted {
				return nil
			}
			last = fmt.Sprintf("ready=%v taints=%v", ready, n.Spec.Taints)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready and untainted after %v: %s", name, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// deleteNode removes the Node object and every pod still bound to it (an
// interrupted earlier run leaves its pods behind: bound to the node's name,
// they would count against the next kubelet's maxPods), and waits until
// both are gone.
func (b *bench) deleteNode(ctx context.Context) error {
	name := b.env["NODE_NAME"]
	if err := b.deleteBoundPods(ctx, name); err != nil {
		return err
	}
	err := b.cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for i := 0; i < 300; i++ {
		if _, err := b.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %s not gone after 30s", name)
}

// deleteBoundPods force-deletes the pods bound to the node and waits until
// none is left.
func (b *bench) deleteBoundPods(ctx context.Context, node string) error {
	sel := metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}
	for i := 0; i < 300; i++ {
		pods, err := b.cs.CoreV1().Pods("").List(ctx, sel)
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		if i == 0 {
			logf("removing %d pods an earlier run left bound to node %s", len(pods.Items), node)
		}
		for _, p := range pods.Items {
			_ = b.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("pods bound to node %s not gone after 30s", node)
}

// kubeletRun is one kubelet started for one round, Ready, with a namespace
// of its own whose pods the tracker follows.
type kubeletRun struct {
	kind  string
	round int
	k     *kubeletProc
	dir   string // its root, configuration and logs
	ns    string
	t     *tracker
}

// runKubelet is one kubelet's share of a round: start it on an empty
// runtime as a freshly registered node, run the workloads, stop it.
func (b *bench) runKubelet(kind string, round int) error {
	return b.withKubelet(kind, round, b.opt.criEndpoint, b.workloads)
}

// runRelistOnly is our kubelet's relist-only share of a round: the exit
// workload alone, on the runtime behind the proxy that streams no events
// (noevents.go). Its log must say it relists alone, or the run fails.
func (b *bench) runRelistOnly(round int, proxy *noEventsProxy) error {
	return b.withKubelet(kindRelist, round, proxy.Endpoint, func(ctx context.Context, r *kubeletRun) error {
		if err := b.runExit(ctx, r.kind, r.ns, r.t); err != nil {
			return err
		}
		log, err := os.ReadFile(r.k.logPath)
		if err != nil {
			return err
		}
		if !strings.Contains(string(log), relistAloneLog) {
			return fmt.Errorf("its log does not say %q: it may have followed an event stream", relistAloneLog)
		}
		return nil
	})
}

// kindRelist is our kubelet on a runtime without an event stream.
const kindRelist = "ours-relist"

// relistAloneLog is what our kubelet logs when its runtime streams no
// container events (pkg/runtime/pleg).
const relistAloneLog = "The container runtime streams no container events; the PLEG relists alone"

// withKubelet starts kind's kubelet for round on an empty runtime (reached
// at endpoint) as a freshly registered node, records its start-up figures,
// runs body, and stops it.
func (b *bench) withKubelet(kind string, round int, endpoint string, body func(context.Context, *kubeletRun) error) (err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := b.opt
	if err := clearRuntime(ctx, b.rt); err != nil {
		return err
	}
	// The quiet wait comes before the node is deleted, so that the start
	// is timed from a deletion just done.
	b.quiet(ctx, fmt.Sprintf("round %d, %s kubelet", round, kind))
	if err := b.deleteNode(ctx); err != nil {
		return err
	}
	bin := o.ours
	if kind == "upstream" {
		bin = o.upstream
	}
	dir := filepath.Join(o.workDir, fmt.Sprintf("%s-r%d", kind, round))
	unmountUnder(dir)
	_ = os.RemoveAll(dir)
	args, healthz, err := kubeletConfig(kind, bin, dir, b.env, endpoint, o.verbosity)
	if err != nil {
		return err
	}
	nodeStart, err := watchNodeStartup(ctx, b.cs, b.env["NODE_NAME"])
	if err != nil {
		return err
	}
	k, err := startKubelet(kind, args, healthz, filepath.Join(o.workDir, fmt.Sprintf("%s-r%d.log", kind, round)))
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("bench-%s-r%d-%d", kind, round, time.Now().Unix()%100000)
	defer func() {
		b.forceCleanup(ns)
		k.stop()
		unmountUnder(dir)
		if cerr := clearRuntime(context.Background(), b.rt); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := b.waitNode(ctx, 120*time.Second); err != nil {
		return fmt.Errorf("%w\nkubelet log tail:\n%s", err, tailFile(k.logPath, 20))
	}
	nodeStart.wait(ctx, 10*time.Second)
	registered, nodeReady := nodeStart.since(k.started)
	if math.IsNaN(registered) || math.IsNaN(nodeReady) {
		logf("round %d, %s: the node watch saw no registration or no Ready within 10 s of the node's Ready; no start-up figures", round, kind)
	}
	b.res.add(kind, "start", "reg", registered)
	b.res.add(kind, "start", "ready", nodeReady)
	time.Sleep(3 * time.Second)
	if p, err := readProc(k.pid()); err == nil {
		b.recordRSS(kind, "start", "rss0", p)
	}
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for i := 0; ; i++ {
		if _, err := b.cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if i > 300 {
			return fmt.Errorf("no default ServiceAccount in %s: %w", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t := newTracker()
	ready := make(chan struct{})
	go t.run(ctx, b.cs, ns, ready)
	<-ready
	return body(ctx, &kubeletRun{kind: kind, round: round, k: k, dir: dir, ns: ns, t: t})
}

// workloads runs every workload of a round on one kubelet, in order.
func (b *bench) workloads(ctx context.Context, r *kubeletRun) error {
	o := b.opt
	kind, round, k, dir, ns, t := r.kind, r.round, r.k, r.dir, r.ns, r.t
	pid := k.pid()
	running := func(p *podTimes) bool { return !p.running.IsZero() }
	gone := func(p *podTimes) bool { return !p.deleted.IsZero() }

	// Batch: small.
	small := podNames("small", o.batchSmall)
	ops0 := b.runtimeOps(ctx)
	w := b.openWindow(ctx, pid)
	if err := createPods(ctx, b.cs, ns, t, small, len(small), 0); err != nil {
		return err
	}
	if err := t.waitAll(small, running, 180*time.Second); err != nil {
		return fmt.Errorf("batch %d: %w", len(small), err)
	}
	time.Sleep(3 * time.Second)
	w.close(ctx, kind, "batch-small", len(small))
	b.recordRuntimeOps(kind, "batch-small", ops0, b.runtimeOps(ctx), len(small))
	b.recordStartup(kind, "batch-small", t.snapshot(small))
	b.recordReportLatency(ctx, kind, "batch-small", ns, t, small)
	if err := deletePods(ctx, b.cs, ns, t, small, len(small)); err != nil {
		return err
	}
	if err := t.waitAll(small, gone, 180*time.Second); err != nil {
		return fmt.Errorf("deleting batch %d: %w", len(small), err)
	}
	b.quiet(ctx, fmt.Sprintf("round %d, %s batch-large", round, kind))

	// Batch: large, then the idle RSS with it running.
	large := podNames("large", o.batchLarge)
	ops0 = b.runtimeOps(ctx)
	w = b.openWindow(ctx, pid)
	profiled := make(chan struct{})
	if o.cpuProfile > 0 {
		go func() {
			defer close(profiled)
			b.saveProfile(ctx, "profile", int(o.cpuProfile.Seconds()),
				filepath.Join(o.workDir, fmt.Sprintf("%s-r%d-cpu-batch-large.pb.gz", kind, round)))
		}()
	} else {
		close(profiled)
	}
	if err := createPods(ctx, b.cs, ns, t, large, len(large), 0); err != nil {
		return err
	}
	if err := t.waitAll(large, running, 300*time.Second); err != nil {
		return fmt.Errorf("batch %d: %w", len(large), err)
	}
	time.Sleep(o.settleIdle)
	p := w.close(ctx, kind, "batch-large", len(large))
	b.recordRuntimeOps(kind, "batch-large", ops0, b.runtimeOps(ctx), len(large))
	b.recordRSS(kind, "batch-large", "rss_idle", p)
	b.saveProfile(ctx, "heap", 0, filepath.Join(o.workDir, fmt.Sprintf("%s-r%d-heap-idle.pb.gz", kind, round)))
	<-profiled
	b.recordStartup(kind, "batch-large", t.snapshot(large))
	b.recordReportLatency(ctx, kind, "batch-large", ns, t, large)

	// Churn: delete the large batch.
	w = b.openWindow(ctx, pid)
	if err := deletePods(ctx, b.cs, ns, t, large, len(large)); err != nil {
		return err
	}
	if err := t.waitAll(large, gone, 300*time.Second); err != nil {
		return fmt.Errorf("churn %d: %w", len(large), err)
	}
	time.Sleep(3 * time.Second)
	w.close(ctx, kind, "churn", len(large))
	lat, batch := deletionFigures(t.snapshot(large))
	s := Summarize(lat)
	b.res.add(kind, "churn", "p50", s.P50)
	b.res.add(kind, "churn", "p90", s.P90)
	b.res.add(kind, "churn", "p99", s.P99)
	b.res.add(kind, "churn", "max", s.Max)
	b.res.add(kind, "churn", "batch", batch)

	// Steady stream.
	b.quiet(ctx, fmt.Sprintf("round %d, %s stream", round, kind))
	stream := podNames("stream", o.streamN)
	ops0 = b.runtimeOps(ctx)
	w = b.openWindow(ctx, pid)
	if err := createPods(ctx, b.cs, ns, t, stream, 1, o.streamEvery); err != nil {
		return err
	}
	if err := t.waitAll(stream, running, 180*time.Second); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	time.Sleep(3 * time.Second)
	w.close(ctx, kind, "stream", len(stream))
	b.recordRuntimeOps(kind, "stream", ops0, b.runtimeOps(ctx), len(stream))
	b.recordStartup(kind, "stream", t.snapshot(stream))
	b.recordReportLatency(ctx, kind, "stream", ns, t, stream)
	if kind == "ours" {
		b.logPhases(kind, k.logPath, ns, t, map[string][]string{"batch-small": small, "batch-large": large, "stream": stream})
	}
	if err := deletePods(ctx, b.cs, ns, t, stream, len(stream)); err != nil {
		return err
	}
	if err := t.waitAll(stream, gone, 180*time.Second); err != nil {
		return fmt.Errorf("deleting stream: %w", err)
	}

	// Containers killed behind the kubelet's back (exit.go).
	if err := b.runExit(ctx, kind, ns, t); err != nil {
		return err
	}

	// Pods with the common volumes (volumes.go).
	if err := b.runVolumes(ctx, kind, ns, t); err != nil {
		return err
	}

	// Pods with a pre-provisioned CSI volume each (csi.go).
	if err := b.runCSI(ctx, kind, dir, ns, t); err != nil {
		return err
	}

	// Log reads (livetail.go).
	return b.runLiveTail(ctx, kind, ns, pid)
}

// logPhases splits our kubelet's share of each pod's startup with its log
// (same machine, same wall clock as the driver): scheduled (watch) → the
// kubelet's ADD → sandbox created → container started → running (watch).
func (b *bench) logPhases(kind, logPath, ns string, t *tracker, sets map[string][]string) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		logf("log phases: %v", err)
		return
	}
	year := time.Now().Year()
	add, sandbox, started := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	for _, line := range strings.Split(string(data), "\n") {
		ev, ok := ParseKlogLine(line, year, time.Local)
		if !ok {
			continue
		}
		for _, p := range ev.Pods {
			m := add
			switch ev.Msg {
			case "Created pod sandbox":
				m = sandbox
			case "Started container":
				m = started
			}
			if _, seen := m[p]; !seen {
				m[p] = ev.At
			}
		}
	}
	for wl, names := range sets {
		var seen, sb, ctr, rep []float64
		for i, p := range t.snapshot(names) {
			key := ns + "/" + names[i]
			a, ok1 := add[key]
			s, ok2 := sandbox[key]
			c, ok3 := started[key]
			if !ok1 || !ok2 || !ok3 || p.scheduled.IsZero() || p.running.IsZero() {
				continue
			}
			seen = append(seen, a.Sub(p.scheduled).Seconds())
			sb = append(sb, s.Sub(a).Seconds())
			ctr = append(ctr, c.Sub(s).Seconds())
			rep = append(rep, p.running.Sub(c).Seconds())
		}
		b.res.add(kind, wl, "lg_seen", Median(seen))
		b.res.add(kind, wl, "lg_sandbox", Median(sb))
		b.res.add(kind, wl, "lg_container", Median(ctr))
		b.res.add(kind, wl, "lg_report", Median(rep))
	}
}

// forceCleanup removes whatever is left of a kubelet's namespace without
// waiting for a kubelet.
func (b *bench) forceCleanup(ns string) {
	ctx := context.Background()
	pods, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, p := range pods.Items {
			_ = b.cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	}
	_ = b.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// runFloorRound runs the two batches and the stream straight through CRI with
// the runtime handler given, recording them as kind.
func (b *bench) runFloorRound(kind, handler string) error {
	ctx := context.Background()
	logRoot := filepath.Join(b.opt.workDir, "floor-logs")
	defer os.RemoveAll(logRoot)
	// settle is how long each kubelet's window stays open after its last
	// pod ran (workloads): the floor's machine CPU counts as long.
	for _, c := range []struct {
		wl     string
		n      int
		every  time.Duration
		settle time.Duration
	}{{"batch-small", b.opt.batchSmall, 0, 3 * time.Second}, {"batch-large", b.opt.batchLarge, 0, b.opt.settleIdle}, {"stream", b.opt.streamN, b.opt.streamEvery, 3 * time.Second}} {
		if err := clearRuntime(ctx, b.rt); err != nil {
			return err
		}
		b.quiet(ctx, fmt.Sprintf("%s %s", kind, c.wl))
		m0 := readMachine(b.opt.clusterRunDir)
		lat, phases, batch, err := runFloor(ctx, b.rt, startgate.New(b.opt.floorSlots, startgate.DefaultSlowAfter), c.n, c.wl, handler, logRoot, c.every)
		if err != nil {
			return err
		}
		time.Sleep(c.settle)
		b.recordMachine(kind, c.wl, m0, readMachine(b.opt.clusterRunDir))
		s := Summarize(Seconds(lat))
		b.res.add(kind, c.wl, "p50", s.P50)
		b.res.add(kind, c.wl, "p90", s.P90)
		b.res.add(kind, c.wl, "p99", s.P99)
		b.res.add(kind, c.wl, "max", s.Max)
		b.res.add(kind, c.wl, "batch", batch.Seconds())
		var sb, cr, st, ctr []time.Duration
		for _, p := range phases {
			sb, cr, st, ctr = append(sb, p.sandbox), append(cr, p.create), append(st, p.start), append(ctr, p.create+p.start)
		}
		b.res.add(kind, c.wl, "cri_sandbox", Median(Seconds(sb)))
		b.res.add(kind, c.wl, "cri_create", Median(Seconds(cr)))
		b.res.add(kind, c.wl, "cri_start", Median(Seconds(st)))
		b.res.add(kind, c.wl, "cri_container", Median(Seconds(ctr)))
	}
	return clearRuntime(ctx, b.rt)
}

// floorOnly runs the floor alone, -rounds times, and logs each workload's
// median figures.
func (b *bench) floorOnly() error {
	for r := 1; r <= b.opt.rounds; r++ {
		if err := b.runFloorRound("floor", ""); err != nil {
			return err
		}
	}
	for _, wl := range []string{"batch-small", "batch-large", "stream"} {
		var parts []string
		for _, f := range []string{"p50", "p90", "batch", "cri_sandbox", "cri_container"} {
			parts = append(parts, fmt.Sprintf("%s %.2f", f, Median(b.res["floor"][wl][f])))
		}
		logf("floor, %d slots, %s: %s", b.opt.floorSlots, wl, strings.Join(parts, ", "))
	}
	return nil
}

type machine struct {
	date, kernel, runtime, commit, upstream, server string
	images                                          string // the two kubelets' loaded images
	cpus                                            int
	memGiB                                          float64
	duration                                        time.Duration
}

func (b *bench) machineInfo(runtimeVersion string, d time.Duration) machine {
	m := machine{date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime: runtimeVersion, commit: b.opt.commit,
		cpus: runtime.NumCPU(), duration: d}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(k))
	}
	if mi, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, err := ParseProcStatusKB(string(mi), "MemTotal"); err == nil {
			m.memGiB = float64(kb) / (1 << 20)
		}
	}
	ours, oerr := loadedImageMB(b.opt.ours)
	up, uerr := loadedImageMB(b.opt.upstream)
	if oerr == nil && uerr == nil {
		m.images = fmt.Sprintf("ours %.1f MB, upstream %.1f MB (%.2f×)", ours, up, ours/up)
	} else {
		m.images = fmt.Sprintf("unknown: %v %v", oerr, uerr)
	}
	if out, err := exec.Command(b.opt.upstream, "--version").Output(); err == nil {
		m.upstream = strings.TrimSpace(string(out))
	}
	if v, err := b.cs.Discovery().ServerVersion(); err == nil {
		m.server = v.GitVersion
	}
	return m
}
