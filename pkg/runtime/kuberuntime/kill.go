package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

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

// killContainer stops one container: the runtime sends SIGTERM and, after
// the grace period, SIGKILL.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id, name, message string, override *int64) error {
	var recorded *int64
	if pod == nil && override == nil {
		if resp, err := m.runtime.ContainerStatus(ctx, id, false); err == nil {
			recorded = containerInfoFrom(resp.GetStatus().GetLabels(), resp.GetStatus().GetAnnotations(), nil).GracePeriod
		}
	}
	grace := gracePeriod(pod, override, recorded)
	if pod != nil {
		c := findContainer(pod, name)
		if c == nil {
			c = &v1.Container{Name: name}
		}
		if message == "" {
			message = fmt.Sprintf("Stopping container %s", name)
		}
		m.opts.Recorder.Event(images.ContainerRef(pod, c), v1.EventTypeNormal, EventKilling, message)
	}
	klog.FromContext(ctx).V(2).Info("Killing container", "containerID", id, "container", name, "gracePeriod", grace)
	if err := m.runtime.StopContainer(ctx, id, grace); err != nil && !isNotFound(err) {
		return fmt.Errorf("stopping container %s (%s): %w", name, id, err)
	}
	return nil
}

func runningFromStatus(s *container.PodStatus) *container.RunningPod {
	rp := &container.RunningPod{UID: s.UID, Name: s.Name, Namespace: s.Namespace, Sandboxes: s.Sandboxes}
	for _, c := range s.Containers {
		if c.State != container.StateExited {
			rp.Containers = append(rp.Containers, c)
		}
	}
	return rp
}

// KillPod implements container.Runtime: all containers in parallel, then
// the sandboxes.
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
	var wg sync.WaitGroup
	errs := make([]error, len(running.Containers))
	for i, c := range running.Containers {
		if c.State == container.StateExited {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.killContainer(ctx, pod, c.ID, c.Name, "", override)
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
		}
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
	if id.Name != "" {
		_ = os.RemoveAll(PodLogDir(m.opts.PodLogsDir, id.Namespace, id.Name, string(uid)))
	}
	_ = os.RemoveAll(filepath.Join(m.opts.RootDir, "pods", string(uid), "containers"))
	return nil
}
