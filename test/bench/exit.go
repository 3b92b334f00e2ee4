package main

// The exit workload: how soon a container's exit that the kubelet did not
// cause reaches the pod's status. Pods run a sleeping container
// (restartPolicy Never); the driver kills each container straight through
// CRI (StopContainer with no grace, as an OOM kill or a crash would end
// it), one every exitEvery, and times from StopContainer's return to the
// first watch event showing the container terminated. A kubelet that
// relists every second sees an exit up to a second late; one that follows
// the runtime's event stream (containerd 2) sees it at once.

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// exitPod is benchPod that is not restarted when its container ends.
func exitPod(name string) *v1.Pod {
	p := benchPod(name)
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	return p
}

// anyTerminated: some container of the pod reports a terminated state.
func anyTerminated(p *v1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return true
		}
	}
	return false
}

// killContainer stops the pod's container through CRI, with no grace.
func (b *bench) killContainer(ctx context.Context, ns, pod string) error {
	cs, err := b.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": ns,
			"io.kubernetes.container.name": "sleep"}})
	if err != nil {
		return err
	}
	if len(cs) != 1 {
		return fmt.Errorf("pod %s/%s: %d running containers named sleep in the runtime, want 1", ns, pod, len(cs))
	}
	return b.rt.StopContainer(ctx, cs[0].Id, 0)
}

// runExit is the exit workload of one kubelet's round.
func (b *bench) runExit(ctx context.Context, kind, ns string, t *tracker) error {
	o := b.opt
	names := podNames("exit", o.exitPods)
	running := func(p *podTimes) bool { return !p.running.IsZero() }
	terminated := func(p *podTimes) bool { return !p.terminated.IsZero() }
	gone := func(p *podTimes) bool { return !p.deleted.IsZero() }
	if err := createPodsWith(ctx, b.cs, ns, t, names, len(names), 0, exitPod); err != nil {
		return err
	}
	if err := t.waitAll(names, running, 180*time.Second); err != nil {
		return fmt.Errorf("exit: %w", err)
	}
	// Let the pods' last status patches land, as the other workloads do
	// after theirs: the kills then meet a quiet kubelet. Not timed.
	time.Sleep(2 * time.Second)
	start := time.Now()
	for i, name := range names {
		time.Sleep(time.Until(start.Add(time.Duration(i) * o.exitEvery)))
		if err := b.killContainer(ctx, ns, name); err != nil {
			return fmt.Errorf("exit: %w", err)
		}
		t.set(name, func(p *podTimes) { p.killed = time.Now() })
	}
	if err := t.waitAll(names, terminated, 60*time.Second); err != nil {
		return fmt.Errorf("exit: %w", err)
	}
	var lat []float64
	for _, p := range t.snapshot(names) {
		lat = append(lat, p.terminated.Sub(p.killed).Seconds())
	}
	s := Summarize(lat)
	b.res.add(kind, "exit", "p50", s.P50)
	b.res.add(kind, "exit", "p90", s.P90)
	b.res.add(kind, "exit", "p99", s.P99)
	b.res.add(kind, "exit", "max", s.Max)
	if err := deletePods(ctx, b.cs, ns, t, names, len(names)); err != nil {
		return err
	}
	if err := t.waitAll(names, gone, 180*time.Second); err != nil {
		return fmt.Errorf("deleting the exit pods: %w", err)
	}
	return nil
}
