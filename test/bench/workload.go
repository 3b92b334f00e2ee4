package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const testImage = "gokubelet.local/testimage:1.0"

// podTimes are the moments the driver saw for one pod: its own calls, and
// the arrival time of the watch events (never the API's 1 s timestamps).
type podTimes struct {
	createIssued time.Time
	scheduled    time.Time // first event with spec.nodeName
	kubeletSeen  time.Time // first event with a kubelet-written status (Initialized condition)
	running      time.Time // first event with every container running
	deleteIssued time.Time
	deleted      time.Time // DELETED event
	killed       time.Time // the exit workload's CRI kill returned
	terminated   time.Time // first event with a container terminated
}

// tracker watches the pods of one namespace and records podTimes.
type tracker struct {
	mu   sync.Mutex
	pods map[string]*podTimes
}

func newTracker() *tracker {
	return &tracker{pods: map[string]*podTimes{}}
}

func (t *tracker) get(name string) *podTimes {
	p := t.pods[name]
	if p == nil {
		p = &podTimes{}
		t.pods[name] = p
	}
	return p
}

func (t *tracker) set(name string, f func(p *podTimes)) {
	t.mu.Lock()
	f(t.get(name))
	t.mu.Unlock()
}

// run watches until ctx ends, resuming from the last resourceVersion when the
// server closes the watch.
func (t *tracker) run(ctx context.Context, cs kubernetes.Interface, ns string, ready chan<- struct{}) {
	rv := ""
	first := true
	for ctx.Err() == nil {
		if rv == "" {
			// Start from a List's resourceVersion: a watch without one asks
			// for initial events, which this apiserver refuses on etcd 3.4
			// ("RequestWatchProgress is disabled").
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			rv = l.ResourceVersion
		}
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if first {
			close(ready)
			first = false
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			pod, ok := ev.Object.(*v1.Pod)
			if !ok {
				// An error (e.g. resourceVersion too old): list again.
				rv = ""
				break
			}
			rv = pod.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			t.mu.Lock()
			p := t.get(pod.Name)
			if ev.Type == watch.Deleted {
				if p.deleted.IsZero() {
					p.deleted = now
				}
			} else {
				if p.scheduled.IsZero() && pod.Spec.NodeName != "" {
					p.scheduled = now
				}
				if p.kubeletSeen.IsZero() && hasCondition(pod, v1.PodInitialized) {
					p.kubeletSeen = now
				}
				if p.running.IsZero() && allRunning(pod) {
					p.running = now
				}
				if p.terminated.IsZero() && anyTerminated(pod) {
					p.terminated = now
				}
			}
			t.mu.Unlock()
		}
		w.Stop()
	}
}

func hasCondition(p *v1.Pod, ct v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == ct {
			return true
		}
	}
	return false
}

// allRunning: every container of the spec reports a running state, i.e. all
// containers started (the pod startup SLI's end).
func allRunning(p *v1.Pod) bool {
	if len(p.Status.ContainerStatuses) < len(p.Spec.Containers) || len(p.Spec.Containers) == 0 {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil {
			return false
		}
	}
	return true
}

// waitAll waits until done(p) holds for every named pod, or the timeout.
// It looks every 20 ms at the pods not done yet (the times themselves are
// taken by the watch as events arrive): waking up for every event would
// cost the driver, on the machine it measures, time quadratic in the pods.
func (t *tracker) waitAll(names []string, done func(*podTimes) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	left := append([]string(nil), names...)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		t.mu.Lock()
		kept := left[:0]
		for _, n := range left {
			if !done(t.get(n)) {
				kept = append(kept, n)
			}
		}
		left = kept
		t.mu.Unlock()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods not done after %v", len(left), len(names), timeout)
		}
		<-tick.C
	}
}

func (t *tracker) snapshot(names []string) []podTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]podTimes, len(names))
	for i, n := range names {
		out[i] = *t.get(n)
	}
	return out
}

func benchPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "sleep", Image: testImage, Command: []string{"sleep", "3600"},
				ImagePullPolicy: v1.PullIfNotPresent,
			}},
			// sleep as PID 1 ignores SIGTERM: without this every deletion
			// would wait out the default 30 s grace period.
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			// Neither kubelet then needs a TokenRequest or a projected volume.
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
}

// parallel runs f(i) for i in [0,n) on `workers` goroutines.
func parallel(n, workers int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// createPods creates the named pods, `workers` at a time (interval 0) or one
// every interval, recording when each create call was issued.
func createPods(ctx context.Context, cs kubernetes.Interface, ns string, t *tracker, names []string, workers int, interval time.Duration) error {
	return createPodsWith(ctx, cs, ns, t, names, workers, interval, benchPod)
}

// createPodsWith is createPods with the pods pod builds.
func createPodsWith(ctx context.Context, cs kubernetes.Interface, ns string, t *tracker, names []string, workers int, interval time.Duration,
	pod func(name string) *v1.Pod) error {
	create := func(i int) error {
		t.set(names[i], func(p *podTimes) { p.createIssued = time.Now() })
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod(names[i]), metav1.CreateOptions{})
		return err
	}
	if interval == 0 {
		return parallel(len(names), workers, create)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range names {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := create(i); err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return first
}

// deletePods deletes the named pods (default grace, from the spec), recording
// when each delete call was issued.
func deletePods(ctx context.Context, cs kubernetes.Interface, ns string, t *tracker, names []string, workers int) error {
	return parallel(len(names), workers, func(i int) error {
		t.set(names[i], func(p *podTimes) { p.deleteIssued = time.Now() })
		err := cs.CoreV1().Pods(ns).Delete(ctx, names[i], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func podNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// startup latencies (create issued → running event) and the batch time
// (first create issued → last pod running).
func startupFigures(ts []podTimes) (lat []float64, batch float64) {
	var first, last time.Time
	for _, p := range ts {
		lat = append(lat, p.running.Sub(p.createIssued).Seconds())
		if first.IsZero() || p.createIssued.Before(first) {
			first = p.createIssued
		}
		if p.running.After(last) {
			last = p.running
		}
	}
	return lat, last.Sub(first).Seconds()
}

func deletionFigures(ts []podTimes) (lat []float64, batch float64) {
	var first, last time.Time
	for _, p := range ts {
		lat = append(lat, p.deleted.Sub(p.deleteIssued).Seconds())
		if first.IsZero() || p.deleteIssued.Before(first) {
			first = p.deleteIssued
		}
		if p.deleted.After(last) {
			last = p.deleted
		}
	}
	return lat, last.Sub(first).Seconds()
}

// phases are per-pod medians of the startup path as the driver sees it.
func phaseFigures(ts []podTimes) (sched, toKubeletStatus, toRunning []float64) {
	for _, p := range ts {
		sched = append(sched, p.scheduled.Sub(p.createIssued).Seconds())
		if !p.kubeletSeen.IsZero() {
			toKubeletStatus = append(toKubeletStatus, p.kubeletSeen.Sub(p.scheduled).Seconds())
			toRunning = append(toRunning, p.running.Sub(p.kubeletSeen).Seconds())
		}
	}
	return
}
