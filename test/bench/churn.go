package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/node/signals"
)

// The churn workload: thousands of pods created and deleted through our
// kubelet, a few at a time, and what a long-running node accumulates
// measured as it goes: dead containers and sandboxes in the runtime,
// images, bytes of container logs, pod directories, pod cgroups, and the
// kubelet's RSS. Pods come in four kinds, in turn: a server that answers
// its readiness probe, one that crash-loops (dead containers), one that
// completes (restartPolicy Never) and one that writes logs fast enough to
// be rotated. Each pod is deleted once it reached its point (running and
// ready, restarted twice, completed, or rotated), or after 60s.

// churnConfig is the kubelet configuration the churn adds: small logs, so
// rotation happens, and a cgroup root of its own.
const churnConfig = `containerLogMaxSize: 64Ki
containerLogMaxFiles: 3
containerLogMonitorInterval: 3s
cgroupRoot: /gokubelet-bench-churn
`

// churnSample is one measurement of the node.
type churnSample struct {
	done                 int // pods deleted so far
	at                   time.Duration
	deadContainers       int
	notReadySandboxes    int
	images               int
	logBytes, logFiles   int64
	podDirs, podCgroups  int
	rssKB, anonKB        uint64
	runningPods, allCtrs int
}

func (b *bench) runChurn() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := b.opt
	if err := clearRuntime(ctx, b.rt); err != nil {
		return err
	}
	if err := b.deleteNode(ctx); err != nil {
		return err
	}
	dir := filepath.Join(o.workDir, "ours-churn")
	unmountUnder(dir)
	_ = os.RemoveAll(dir)
	args, healthz, err := kubeletConfig("ours", o.ours, dir, b.env, o.criEndpoint, o.verbosity)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, append(cfg, churnConfig...), 0o644); err != nil {
		return err
	}
	k, err := startKubelet("ours", args, healthz, filepath.Join(o.workDir, "ours-churn.log"))
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("bench-churn-%d", time.Now().Unix()%100000)
	defer func() {
		b.forceCleanup(ns)
		k.stop()
		unmountUnder(dir)
		_ = clearRuntime(context.Background(), b.rt)
	}()
	if err := b.waitNode(ctx, 120*time.Second); err != nil {
		return fmt.Errorf("%w\nkubelet log tail:\n%s", err, tailFile(k.logPath, 20))
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
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(o.criEndpoint).WithConnectionTimeout(30 * time.Second).WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return err
	}
	measure := func(done int, start time.Time) churnSample {
		s := churnSample{done: done, at: time.Since(start)}
		if cs, err := b.rt.ListContainers(ctx, nil); err == nil {
			s.allCtrs = len(cs)
			for _, c := range cs {
				if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
					s.deadContainers++
				}
			}
		}
		if sbs, err := b.rt.ListPodSandbox(ctx, nil); err == nil {
			for _, sb := range sbs {
				if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
					s.notReadySandboxes++
				}
			}
		}
		if imgs, err := is.ListImages(ctx, nil); err == nil {
			s.images = len(imgs)
		}
		s.logBytes, s.logFiles, _ = signals.DirUsage(filepath.Join(dir, "pod-logs"))
		if es, err := os.ReadDir(filepath.Join(dir, "root", "pods")); err == nil {
			s.podDirs = len(es)
		}
		s.podCgroups = countPodCgroups("/sys/fs/cgroup/memory/gokubelet-bench-churn/kubepods")
		if p, err := readProc(k.pid()); err == nil {
			s.rssKB, s.anonKB = p.rssKB, p.anonKB
		}
		if l, err := b.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
			s.runningPods = len(l.Items)
		}
		return s
	}

	start := time.Now()
	samples := []churnSample{measure(0, start)}
	total := o.churn
	conc := o.churnConcurrency
	every := total / 10
	if every < 1 {
		every = 1
	}
	var created, deleted atomic.Int64
	var mu sync.Mutex
	var failures []string
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			name := fmt.Sprintf("churn-%05d", i)
			if err := b.churnOne(ctx, ns, name, i%4); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s: %v", name, err))
				mu.Unlock()
			}
			created.Add(1)
			if n := deleted.Add(1); n%int64(every) == 0 {
				s := measure(int(n), start)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				logf("churn: %d/%d pods done, %d dead containers, %d log files, %d pod dirs, RSS %d MiB",
					n, total, s.deadContainers, s.logFiles, s.podDirs, s.rssKB/1024)
			}
		}(i)
	}
	wg.Wait()
	// Let the collectors make their rounds (container GC every minute,
	// housekeeping sweeps of pod directories and cgroups) and measure the
	// settled node.
	deadline := time.Now().Add(3 * time.Minute)
	var last churnSample
	for {
		last = measure(total, start)
		if (last.deadContainers == 0 && last.podDirs == 0 && last.podCgroups == 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Second)
	}
	samples = append(samples, last)
	b.churnSamples = samples
	b.churnFailures = failures
	b.churnWall = time.Since(start)
	return nil
}

// churnOne runs one pod of the given kind to its point and deletes it.
func (b *bench) churnOne(ctx context.Context, ns, name string, kind int) error {
	p := benchPod(name)
	p.Labels["app"] = "churn"
	c := &p.Spec.Containers[0]
	var done func(*v1.Pod) bool
	switch kind {
	case 0: // a server with a readiness probe
		c.Command = nil
		c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
		done = func(p *v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
		}
	case 1: // crash loop: dead containers
		c.Command = []string{"sh", "-c", "echo crashing; exit 1"}
		done = func(p *v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
		}
	case 2: // completes
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		c.Command = []string{"sh", "-c", "echo done"}
		done = func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded }
	default: // chatty: rotated logs
		c.Command = []string{"sh", "-c", "i=0; while [ $i -lt 4000 ]; do echo churn log line $i 0123456789012345678901234567890123456789; i=$((i+1)); done; sleep 3600"}
		done = func(p *v1.Pod) bool { return time.Since(p.CreationTimestamp.Time) > 12*time.Second }
	}
	if _, err := b.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		var cur *v1.Pod
		cur, err = b.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && done(cur) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if derr := b.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
		return derr
	}
	for time.Now().Before(deadline.Add(60 * time.Second)) {
		if _, err := b.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("not gone 60s after its deletion")
}

var podDirName = regexp.MustCompile(`^pod[0-9a-f-]+$`)

// countPodCgroups counts pod cgroups under kubepods and its QoS levels.
func countPodCgroups(kubepods string) int {
	n := 0
	for _, d := range []string{kubepods, filepath.Join(kubepods, "burstable"), filepath.Join(kubepods, "besteffort")} {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if e.IsDir() && podDirName.MatchString(e.Name()) {
				n++
			}
		}
	}
	return n
}

// churnReport is the churn section of docs/benchmarks.md.
func (b *bench) churnReport() string {
	var sb strings.Builder
	o := b.opt
	fmt.Fprintf(&sb, "%s\n## Churn: what a long-running node accumulates\n\n", churnBegin)
	fmt.Fprintf(&sb, "Written by `make bench-churn` (hack/bench.sh with BENCH_MODE=churn, test/bench/churn.go) on %s, commit %s: "+
		"%d pods created and deleted through our kubelet, %d at a time, in %s. Kinds in turn: a server with a readiness probe "+
		"(deleted once ready), a crash-looping container (deleted after its second restart: dead containers), a completing pod "+
		"(restartPolicy Never), and a chatty one writing ~400 KiB of logs (deleted after 12s). Kubelet configuration as the main "+
		"benchmark plus:\n\n```yaml\n%s```\n\nDead-container GC runs with upstream's policy (one dead instance per container, no "+
		"total limit, no minimum age); image GC at 85%%/80%%. The last row is the settled node: measured once the last pod was gone "+
		"and the collectors made their rounds (or 3 minutes passed).\n\n",
		time.Now().UTC().Format("2006-01-02"), o.commit, o.churn, o.churnConcurrency, b.churnWall.Round(time.Second), churnConfig)
	sb.WriteString("| pods done | elapsed | pods in API | containers (dead) | not-ready sandboxes | images | log files | log bytes | pod dirs | pod cgroups | kubelet RSS (anonymous) |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range b.churnSamples {
		fmt.Fprintf(&sb, "| %d | %s | %d | %d (%d) | %d | %d | %d | %.1f MiB | %d | %d | %.1f MiB (%.1f) |\n",
			s.done, s.at.Round(time.Second), s.runningPods, s.allCtrs, s.deadContainers, s.notReadySandboxes, s.images,
			s.logFiles, float64(s.logBytes)/(1<<20), s.podDirs, s.podCgroups, float64(s.rssKB)/1024, float64(s.anonKB)/1024)
	}
	if len(b.churnFailures) > 0 {
		fmt.Fprintf(&sb, "\n%d pods did not reach their point: %s\n", len(b.churnFailures), strings.Join(firstN(b.churnFailures, 5), "; "))
	}
	sb.WriteString("\n" + churnEnd + "\n")
	return sb.String()
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Markers of the churn section: `make bench` keeps it when it rewrites the
// rest of the file, `make bench-churn` replaces only it.
var churnBegin, churnEnd = sectionMarkers("churn")

// withChurnSection puts section into doc in place of its old churn
// section, or at its end.
func withChurnSection(doc, section string) string { return withSection(doc, "churn", section) }

// churnSectionOf returns the churn section of doc ("" when none).
func churnSectionOf(doc string) string { return sectionOf(doc, "churn") }

var _ = ptr.To[int64]
