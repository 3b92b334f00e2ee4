package kuberuntime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// terminationOrder makes sidecars stop last, in reverse order: each waits
// until every app container and every sidecar after it has stopped (or its
// grace period is over). App and regular init containers never wait.
type terminationOrder struct {
	mu      sync.Mutex
	done    map[string]chan struct{}
	prereqs map[string][]chan struct{}
}

// newTerminationOrder builds the order for a pod whose containers named
// running are being stopped; containers not running count as stopped.
func newTerminationOrder(pod *v1.Pod, running []string) *terminationOrder {
	o := &terminationOrder{done: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, n := range running {
		isRunning[n] = true
	}
	ch := func(name string) chan struct{} {
		c := make(chan struct{})
		if !isRunning[name] {
			close(c)
		}
		o.done[name] = c
		return c
	}
	var apps []chan struct{}
	for _, c := range pod.Spec.Containers {
		apps = append(apps, ch(c.Name))
	}
	var later chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		own := ch(c.Name)
		if !podspec.IsSidecar(c) {
			continue
		}
		o.prereqs[c.Name] = append(o.prereqs[c.Name], apps...)
		if later != nil {
			o.prereqs[c.Name] = append(o.prereqs[c.Name], later)
		}
		later = own
	}
	return o
}

// waitForTurn blocks until the container may stop, for at most grace
// seconds, and returns the whole seconds waited.
func (o *terminationOrder) waitForTurn(name string, grace int64) int64 {
	start := time.Now()
	timer := time.NewTimer(time.Duration(grace) * time.Second)
	defer timer.Stop()
	for _, c := range o.prereqs[name] {
		select {
		case <-c:
		case <-timer.C:
			return int64(time.Since(start).Seconds())
		}
	}
	return int64(time.Since(start).Seconds())
}

// terminated records that the container stopped.
func (o *terminationOrder) terminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.done[name]; ok {
		select {
		case <-c:
		default:
			close(c)
		}
		delete(o.done, name)
	}
}

func hasSidecar(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}
