package kuberuntime

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

// SyncPod implements container.Runtime: it computes the pod's actions and
// carries them out, one step per CRI operation. Deferred restarts (crash
// back-off) are reported as steps with Reason CrashLoopBackOff and an error,
// without touching the runtime; see OnlyDeferred.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus) container.SyncResult {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUID", pod.UID)
	ctx = klog.NewContext(ctx, logger)
	if status == nil {
		status = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	a := ComputePodActionsWith(pod, status, m.crash, Probes{Liveness: m.opts.Liveness, Started: m.opts.Started}, m.clock.Now())
	logger.V(4).Info("Computed pod actions", "actions", a)
	var res container.SyncResult
	add := func(s container.StepResult) { res.Steps = append(res.Steps, s) }

	if a.CreateSandbox && len(status.Sandboxes) > 0 {
		logger.Info("Re-creating the pod sandbox", "reason", a.SandboxReason, "attempt", a.Attempt)
	}
	if a.KillPod {
		if a.CreateSandbox && len(status.Sandboxes) > 0 {
			m.opts.Recorder.Event(images.ContainerRef(pod, nil), v1.EventTypeNormal, EventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		err := m.KillPod(ctx, pod, runningFromStatus(status), nil)
		step := container.StepResult{Action: container.ActionKillSandbox, Err: err}
		if err != nil {
			step.Reason, step.Message = ReasonKillPodSandboxError, err.Error()
		}
		add(step)
		if err != nil || !a.CreateSandbox {
			return res
		}
	} else if len(a.ContainersToKill) > 0 {
		var wg sync.WaitGroup
		steps := make([]container.StepResult, len(a.ContainersToKill))
		for i, k := range a.ContainersToKill {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := m.killContainer(ctx, pod, k.ID, k.Name, k.Message, k.GracePeriod, firstIP(status.IPs))
				steps[i] = container.StepResult{Action: container.ActionKill, Container: k.Name, Err: err}
				if err != nil {
					steps[i].Reason, steps[i].Message = ReasonKillContainerError, err.Error()
				}
			}()
		}
		wg.Wait()
		res.Steps = append(res.Steps, steps...)
		for _, s := range steps {
			if s.Err != nil {
				return res
			}
		}
	}

	if !a.KillPod && !a.CreateSandbox && ctx.Err() == nil {
		steps, restarted := m.resizePod(ctx, pod, status)
		res.Steps = append(res.Steps, steps...)
		if restarted {
			return res
		}
	}

	for _, d := range a.Deferred {
		action := container.ActionStart
		if d.Init {
			action = container.ActionStartInit
		}
		if c := findContainer(pod, d.Name); c != nil {
			m.opts.Recorder.Event(images.ContainerRef(pod, c), v1.EventTypeWarning, EventBackOff, "Back-off restarting failed container "+d.Name+" in pod "+podspec.Format(pod))
		}
		add(container.StepResult{Action: action, Container: d.Name, Err: errors.New(d.Message), Reason: d.Reason, Message: d.Message, RetryAfter: d.RetryAfter})
	}

	if len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 && len(a.EphemeralContainersToStart) == 0 && !a.CreateSandbox {
		return res
	}

	// A cancelled sync (the pod is being killed) stops between steps; a step
	// under way runs to its end (see detached).
	if ctx.Err() != nil {
		return res
	}
	var sandboxID string
	var sandboxCfg *runtimeapi.PodSandboxConfig
	podIPs := status.IPs
	if a.CreateSandbox {
		id, cfg, ips, err := m.createSandbox(ctx, pod, a.Attempt)
		step := container.StepResult{Action: container.ActionCreateSandbox, Err: err}
		var prepErr prepareResourcesError
		if errors.As(err, &prepErr) {
			// The pod's resources are not ready (a claim not reserved
			// yet, a driver not registered or failing): its containers
			// wait in ContainerCreating, saying why, and it is retried.
			m.opts.Recorder.Eventf(images.ContainerRef(pod, nil), v1.EventTypeWarning, EventFailedPrepareDynamicResources, "%v", err)
			logger.Info("Pod resources not prepared", "err", err)
			step.Reason, step.Message = ReasonContainerCreating, err.Error()
			add(step)
			for _, s := range append(append([]ContainerToStart{}, a.InitContainersToStart...), a.ContainersToStart...) {
				add(container.StepResult{Action: container.ActionCreateSandbox, Container: s.Name, Err: err,
					Reason: ReasonContainerCreating, Message: err.Error()})
			}
			return res
		}
		if err != nil {
			step.Reason, step.Message = ReasonCreatePodSandboxError, err.Error()
			m.opts.Recorder.Eventf(images.ContainerRef(pod, nil), v1.EventTypeWarning, EventFailedSandbox, "Failed to create pod sandbox: %v", err)
			logger.Info("Pod sandbox not created", "err", err)
			add(step)
			var cfgErr sandboxConfigError
			if errors.As(err, &cfgErr) {
				// The spec asks for something this node cannot do: every
				// container waits with the reason, not just "creating".
				for _, s := range append(append([]ContainerToStart{}, a.InitContainersToStart...), a.ContainersToStart...) {
					add(container.StepResult{Action: container.ActionCreateSandbox, Container: s.Name, Err: err,
						Reason: ReasonCreatePodSandboxError, Message: err.Error()})
				}
			}
			return res
		}
		add(step)
		logger.V(2).Info("Created pod sandbox", "sandboxID", id, "attempt", a.Attempt)
		sandboxID, sandboxCfg, podIPs = id, cfg, ips
	} else {
		cfg, err := m.SandboxConfig(pod, a.Attempt)
		if err != nil {
			add(container.StepResult{Action: container.ActionStart, Err: err, Reason: ReasonCreateContainerConfigError, Message: err.Error()})
			return res
		}
		sandboxID, sandboxCfg = a.SandboxID, cfg
	}

	// Ephemeral containers first: a debugging container must start even
	// when an init container cannot.
	for _, s := range a.EphemeralContainersToStart {
		if ctx.Err() != nil {
			return res
		}
		add(m.startContainer(ctx, pod, s, sandboxID, sandboxCfg, podIPs, status))
	}
	for _, s := range a.InitContainersToStart {
		if ctx.Err() != nil {
			return res
		}
		step := m.startContainer(ctx, pod, s, sandboxID, sandboxCfg, podIPs, status)
		if step.Err == nil && podspec.IsSidecar(&pod.Spec.InitContainers[s.Index]) && pod.Spec.InitContainers[s.Index].StartupProbe == nil {
			// A running sidecar lets initialization go on at once, but
			// nothing else would wake the pod (the runtime shows no exit,
			// and a probe result only comes with a startup probe): ask for
			// the next round now.
			step.RetryAfter = SidecarStartedRetry
		}
		add(step)
		if step.Err != nil {
			return res
		}
		m.recordActuated(ctx, pod, s.Name)
		m.pruneOldInstances(ctx, status, s.Name)
	}
	for _, s := range a.ContainersToStart {
		if ctx.Err() != nil {
			return res
		}
		step := m.startContainer(ctx, pod, s, sandboxID, sandboxCfg, podIPs, status)
		add(step)
		if step.Err == nil {
			m.recordActuated(ctx, pod, s.Name)
			m.pruneOldInstances(ctx, status, s.Name)
		}
	}
	return res
}

// SidecarStartedRetry is the RetryAfter of a sidecar start without a
// startup probe: the caller should sync the pod again right away to start
// what comes after it.
const SidecarStartedRetry = time.Millisecond

// pruneOldInstances removes exited instances of a container older than the
// one that ran just before the new one: a crash loop keeps the previous
// instance (for logs --previous) and nothing older.
func (m *Manager) pruneOldInstances(ctx context.Context, status *container.PodStatus, name string) {
	latest := status.Latest(name)
	if latest == nil {
		return
	}
	for _, c := range status.Containers {
		if c.Name != name || c.ID == latest.ID || c.State != container.StateExited {
			continue
		}
		if err := m.runtime.RemoveContainer(ctx, c.ID); err != nil && !isNotFound(err) {
			klog.FromContext(ctx).V(2).Info("Removing old container instance failed", "containerID", c.ID, "err", err)
			continue
		}
		m.unlinkContainerLog(status.Name, status.Namespace, c.Name, c.ID)
	}
}
