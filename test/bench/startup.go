package main

// Figures around a kubelet's own start and its reports of started containers:
// process start to a registered and a Ready node, RSS split into its
// anonymous and file-backed parts, and a container's start in the runtime to
// the driver's first sight of it running.

import (
	"context"
	"debug/elf"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nodeStartup records when the node first appears and first turns Ready, on
// the driver's clock, from a watch opened before the kubelet starts (the
// Node object's timestamps have a 1 s resolution).
type nodeStartup struct {
	mu                sync.Mutex
	registered, ready time.Time
	// done is closed when the watch has seen Ready or has ended.
	done chan struct{}
}

func watchNodeStartup(ctx context.Context, cs kubernetes.Interface, name string) (*nodeStartup, error) {
	sel := metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	list, err := cs.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	ns := &nodeStartup{done: make(chan struct{})}
	go func() {
		defer close(ns.done)
		// The watch goes on from the last version it saw when the API
		// server ends it early (one run's start-up figures were lost so,
		// its watch closed within 3 s of the kubelet's start), so that no
		// event between the two watches is missed.
		rv := list.ResourceVersion
		for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
			if ns.follow(ctx, cs, name, &rv) {
				return
			}
		}
	}()
	return ns, nil
}

// follow watches the node from *rv until it is Ready (true) or the watch
// ends (false), moving *rv on with each event.
func (s *nodeStartup) follow(ctx context.Context, cs kubernetes.Interface, name string, rv *string) bool {
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: *rv})
	if err != nil {
		logf("node start-up watch: %v", err)
		return false
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := time.Now()
		if ev.Type == watch.Error {
			logf("node start-up watch ended with an error event: %v", ev.Object)
			return false
		}
		n, ok := ev.Object.(*v1.Node)
		if !ok {
			continue
		}
		*rv = n.ResourceVersion
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			continue
		}
		s.mu.Lock()
		if s.registered.IsZero() {
			s.registered = now
		}
		if s.ready.IsZero() && nodeReady(n) {
			s.ready = now
		}
		done := !s.ready.IsZero()
		s.mu.Unlock()
		if done {
			return true
		}
	}
	if ctx.Err() == nil {
		logf("node start-up watch closed before the node was Ready; watching again from version %s", *rv)
	}
	return false
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// wait waits at most limit for the watch to see the node Ready. The driver's
// own check that the node is Ready (a GET) can come before the watch event
// that carries the same Ready: read at that moment, the figures were empty in
// every round of a run where our kubelet turned Ready within ~50 ms of its
// registration.
func (s *nodeStartup) wait(ctx context.Context, limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// since returns the seconds from start to the registration and to Ready
// (NaN for what has not happened).
func (s *nodeStartup) since(start time.Time) (registered, ready float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return secondsSince(start, s.registered), secondsSince(start, s.ready)
}

// recordReportLatency adds, for the pods named, the median time from each
// container's start in the runtime (its CRI StartedAt, nanoseconds on this
// machine's clock) to the driver's first watch event showing it running: the
// kubelet's part of reporting a start (noticing it, the status PATCH, the
// API's watch). Read after the workload's window, so it costs the kubelet
// nothing measured.
func (b *bench) recordReportLatency(ctx context.Context, kind, wl, ns string, t *tracker, names []string) {
	started, err := containerStarts(ctx, b.rt, ns)
	if err != nil {
		logf("%s %s: container starts: %v", kind, wl, err)
		return
	}
	var lat []float64
	for i, p := range t.snapshot(names) {
		s, ok := started[names[i]]
		if !ok || p.running.IsZero() {
			continue
		}
		lat = append(lat, p.running.Sub(s).Seconds())
	}
	if len(lat) != len(names) {
		logf("%s %s: a container start for %d of %d pods", kind, wl, len(lat), len(names))
	}
	b.res.add(kind, wl, "ph_report", Median(lat))
}

// containerStarts maps each pod of namespace ns to its container's start, as
// the runtime recorded it. Both kubelets label containers with the pod's name
// and namespace.
func containerStarts(ctx context.Context, rt cri.RuntimeService, ns string) (map[string]time.Time, error) {
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns},
	})
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			return nil, fmt.Errorf("ContainerStatus %s: %w", c.Id, err)
		}
		if st.GetStatus().GetStartedAt() == 0 {
			continue
		}
		at := time.Unix(0, st.GetStatus().GetStartedAt())
		pod := c.Labels["io.kubernetes.pod.name"]
		if prev, ok := out[pod]; !ok || at.Before(prev) {
			out[pod] = at
		}
	}
	return out, nil
}

// secondsSince is t−start in seconds, NaN when t is unset.
func secondsSince(start, t time.Time) float64 {
	if t.IsZero() {
		return math.NaN()
	}
	return t.Sub(start).Seconds()
}

// recordRSS adds a process's RSS and its two parts, in MiB, as fig,
// fig_anon and fig_file.
func (b *bench) recordRSS(kind, wl, fig string, p procSample) {
	b.res.add(kind, wl, fig, float64(p.rssKB)/1024)
	b.res.add(kind, wl, fig+"_anon", float64(p.anonKB)/1024)
	b.res.add(kind, wl, fig+"_file", float64(p.fileKB)/1024)
}

// loadedImageMB is the size of a binary's sections that are loaded into
// memory (SHF_ALLOC, without .bss), in MB (10^6 bytes): its stripped size,
// less the ELF headers, whether or not the file carries symbols and DWARF.
func loadedImageMB(path string) (float64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n uint64
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS {
			n += s.Size
		}
	}
	return float64(n) / 1e6, nil
}

// saveProfile keeps one of the kubelet's profiles (its /debug/pprof/<which>,
// through the API server's node proxy) in path, for `go tool pprof`: the
// heap as the last GC saw it (where the anonymous memory of an idle node
// with pods goes), or a CPU profile. Not part of the report.
// A CPU profile ("profile") lasts seconds.
func (b *bench) saveProfile(ctx context.Context, which string, seconds int, path string) {
	req := b.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", b.env["NODE_NAME"], "proxy/debug/pprof/"+which)
	if seconds > 0 {
		req = req.Param("seconds", fmt.Sprint(seconds)).Timeout(time.Duration(seconds+30) * time.Second)
	}
	raw, err := req.DoRaw(ctx)
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		logf("profile %s: %v", which, err)
		return
	}
	logf("profile %s: %s", which, path)
}

// runtimeOps reads the kubelet's runtime calls so far by operation type
// (kubelet_runtime_operations_total, which both kubelets export), through
// the API server's node proxy; nil when it cannot.
func (b *bench) runtimeOps(ctx context.Context) map[string]float64 {
	raw, err := b.cs.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", b.env["NODE_NAME"], "proxy/metrics").DoRaw(ctx)
	if err != nil {
		logf("kubelet metrics: %v", err)
		return nil
	}
	ops, err := SumByLabel(string(raw), "kubelet_runtime_operations_total", "operation_type")
	if err != nil {
		logf("kubelet metrics: %v", err)
		return nil
	}
	return ops
}

// recordRuntimeOps adds the runtime calls per pod between two readings, by
// operation type ("ops:<type>") and in all ("ops").
func (b *bench) recordRuntimeOps(kind, wl string, before, after map[string]float64, pods int) {
	if before == nil || after == nil || pods == 0 {
		return
	}
	var all float64
	for op, n := range after {
		d := n - before[op]
		all += d
		b.res.add(kind, wl, "ops:"+op, d/float64(pods))
	}
	b.res.add(kind, wl, "ops", all/float64(pods))
}
