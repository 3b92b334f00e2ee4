package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/dns"
	"github.com/gokubelet/kubelet/pkg/pod/hooks"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

const (
	defaultGracePeriod = 30
	minGracePeriod     = 2
)

// gracePeriod picks the stop timeout for a container: the override, else
// the pod's deletion grace period, else its terminationGracePeriodSeconds,
// else what the container recorded at creation, else 30 s. An override
// below 2 s is raised to 2 s so the process sees SIGTERM.
func gracePeriod(pod *v1.Pod, override *int64, recorded *int64) int64 {
	switch {
	case override != nil:
		if *override < minGracePeriod {
			return minGracePeriod
		}
		return *override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	case recorded != nil:
		return *recorded
	}
	return defaultGracePeriod
}

// killContainer stops one container: its preStop hook first (within the
// grace period), then the runtime sends SIGTERM and, after what is left of
// the grace period (at least 2 s), SIGKILL. podIP is the host of an
// httpGet hook without one. A pod-less kill (an orphan) finds the grace
// period and the preStop hook on the container's annotations.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id, name, message string, override *int64, podIP string) error {
	return m.killContainerOrdered(ctx, pod, id, name, message, override, podIP, nil)
}

func (m *Manager) killContainerOrdered(ctx context.Context, pod *v1.Pod, id, name, message string, override *int64, podIP string, order *terminationOrder) error {
	var recorded *int64
	var c *v1.Container
	if pod != nil {
		c = findContainer(pod, name)
	}
	if c == nil {
		if resp, err := m.runtime.ContainerStatus(ctx, id, false); err == nil {
			info := containerInfoFrom(resp.GetStatus().GetLabels(), resp.GetStatus().GetAnnotations(), nil)
			recorded = info.GracePeriod
			c = &v1.Container{Name: name}
			if info.PreStop != nil {
				c.Lifecycle = &v1.Lifecycle{PreStop: info.PreStop}
			}
		} else {
			c = &v1.Container{Name: name}
		}
	}
	grace := gracePeriod(pod, override, recorded)
	if pod != nil {
		if message == "" {
			message = fmt.Sprintf("Stopping container %s", name)
		}
		m.opts.Recorder.Event(images.ContainerRef(pod, c), v1.EventTypeNormal, EventKilling, message)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		grace -= m.runPreStop(ctx, pod, c, id, podIP, grace)
	}
	if order != nil && grace > 0 {
		grace -= order.waitForTurn(name, grace)
	}
	if grace < minGracePeriod {
		grace = minGracePeriod
	}
	klog.FromContext(ctx).V(2).Info("Killing container", "containerID", id, "container", name, "gracePeriod", grace)
	if err := m.runtime.StopContainer(ctx, id, grace); err != nil && !isNotFound(err) {
		return fmt.Errorf("stopping container %s (%s): %w", name, id, err)
	}
	if order != nil {
		order.terminated(name)
	}
	return nil
}

// runPreStop runs the preStop hook and waits for it for at most grace
// seconds, returning the whole seconds it waited. As upstream's, the hook
// itself is not cut off at the grace period: the kubelet stops waiting and
// stops the container, and an exec'd hook ends with it (its runtime exec
// has no timeout of its own; preStopOverrun bounds a hook that would
// outlive even that). A failed hook is logged and recorded as a
// FailedPreStopHook event, also when it fails after the wait; the container
// is stopped anyway.
func (m *Manager) runPreStop(ctx context.Context, pod *v1.Pod, c *v1.Container, id, podIP string, grace int64) int64 {
	logger := klog.FromContext(ctx)
	start := m.clock.Now()
	hookPod := pod
	if hookPod == nil {
		hookPod = &v1.Pod{}
	}
	limit := time.Duration(grace) * time.Second
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit+preStopOverrun)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		msg, err := m.hooks.Run(hctx, hookPod, c, id, podIP, c.Lifecycle.PreStop, 0)
		if err != nil {
			logger.Error(err, "PreStop hook failed", "pod", klog.KObj(hookPod), "container", c.Name, "containerID", id, "message", msg)
			if pod != nil {
				m.opts.Recorder.Event(images.ContainerRef(pod, c), v1.EventTypeWarning, hooks.EventFailedPreStopHook, "PreStopHook failed")
			}
			return
		}
		logger.V(3).Info("PreStop hook completed", "pod", klog.KObj(hookPod), "container", c.Name, "containerID", id)
	}()
	timer := m.clock.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C():
		logger.V(2).Info("PreStop hook not completed in the grace period; stopping the container", "pod", klog.KObj(hookPod), "container", c.Name, "containerID", id, "gracePeriod", grace)
	}
	return int64(m.clock.Since(start).Seconds())
}

// preStopOverrun is how long a preStop hook may run past its grace period
// before it is cancelled: stopping the container normally ends it first.
const preStopOverrun = time.Minute

func runningFromStatus(s *container.PodStatus) *container.RunningPod {
	rp := &container.RunningPod{UID: s.UID, Name: s.Name, Namespace: s.Namespace, Sandboxes: s.Sandboxes}
	for _, c := range s.Containers {
		if c.State != container.StateExited {
			rp.Containers = append(rp.Containers, c)
		}
	}
	return rp
}

// KillPod implements container.Runtime: all containers, then the
// sandboxes. Containers stop in parallel, except that sidecars wait for
// every app container to stop, and for the sidecars after them, so they
// stop in reverse order, as upstream.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, running *container.RunningPod, override *int64) error {
	if running == nil {
		if pod == nil {
			return errors.New("KillPod needs a pod or a running pod")
		}
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			return err
		}
		running = runningFromStatus(st)
	}
	podIP := ""
	for _, sb := range running.Sandboxes {
		if len(sb.IPs) > 0 && sb.State == container.SandboxReady {
			podIP = sb.IPs[0]
			break
		}
	}
	var order *terminationOrder
	if pod != nil && hasSidecar(pod) {
		var names []string
		for _, c := range running.Containers {
			if c.State != container.StateExited {
				names = append(names, c.Name)
			}
		}
		order = newTerminationOrder(pod, names)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(running.Containers))
	for i, c := range running.Containers {
		if c.State == container.StateExited {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.killContainerOrdered(ctx, pod, c.ID, c.Name, "", override, podIP, order)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, sb := range running.Sandboxes {
		if err := m.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
			if pod != nil {
				m.opts.Recorder.Eventf(images.ContainerRef(pod, nil), v1.EventTypeWarning, EventFailedKillPod, "error killing pod: %v", err)
			}
			return fmt.Errorf("stopping sandbox %s: %w", sb.ID, err)
		}
	}
	return nil
}

// RemovePod implements container.Runtime. It also removes the pod's log
// directory and its emptyDir volumes.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	sel := map[string]string{LabelPodUID: string(uid)}
	ctrs, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range ctrs {
		if err := m.runtime.RemoveContainer(ctx, c.Id); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", c.Id, err))
			continue
		}
		l := c.GetLabels()
		m.unlinkContainerLog(l[LabelPodName], l[LabelPodNamespace], l[LabelContainerName], c.Id)
	}
	sbs, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	var id podIdentity
	for _, sb := range sbs {
		if i, ok := identityFromLabels(sb.Labels); ok {
			id = i
		}
		if err := m.runtime.RemovePodSandbox(ctx, sb.Id); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", sb.Id, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if podspec.UIDPathElement(string(uid)) != nil {
		// Not one clean path element: no directory of its own to remove
		// (admission refuses such pods before any is made).
		return nil
	}
	if id.Name != "" {
		_ = os.RemoveAll(PodLogDir(m.opts.PodLogsDir, id.Namespace, id.Name, string(uid)))
	}
	// The pod dir itself (volumes, hosts file) is the volume manager's and
	// the engine's to remove: a RemoveAll here would walk through mounts.
	_ = os.RemoveAll(filepath.Join(PodDir(m.opts.RootDir, string(uid)), "containers"))
	_ = os.Remove(dns.HostsFilePath(PodDir(m.opts.RootDir, string(uid))))
	return nil
}
