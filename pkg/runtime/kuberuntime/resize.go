package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// In-place resize. SyncPod runs the pod it is given, which carries the
// kubelet's allocated resources (pkg/pod/allocation); the container hash
// leaves resources out, so a resized container is not "changed". What a
// running container was last given is recorded as its actuated resources;
// when they differ from the allocation, the container is updated through
// CRI UpdateContainerResources (resizePolicy NotRequired) or restarted
// (RestartContainer for a resource that changed), and the pod's cgroup is
// set before the containers when the pod grows, after them when it
// shrinks.

// ActuatedResources records what each container was last given.
type ActuatedResources interface {
	Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, name string, r v1.ResourceRequirements) error
}

// ReasonResizeError is the step reason of a resize the runtime refused.
const ReasonResizeError = "ResizeError"

// ContainerResize is one running container whose resources must change.
type ContainerResize struct {
	Name    string
	ID      string
	Init    bool
	Index   int
	Restart bool
	// From and To are the actuated and allocated resources.
	From, To v1.ResourceRequirements
}

// ComputeResize lists the running containers of pod (carrying its
// allocation) whose actuated resources differ from it. A container with
// no record counts as actuated at its allocation (it was started before
// actuations were recorded). Restart is set when a changed resource's
// resizePolicy is RestartContainer.
func ComputeResize(pod *v1.Pod, status *container.PodStatus, actuated func(name string) (v1.ResourceRequirements, bool)) []ContainerResize {
	var out []ContainerResize
	visit := func(c *v1.Container, init bool, idx int) {
		s := status.Latest(c.Name)
		if s == nil || s.State != container.StateRunning {
			return
		}
		from, ok := actuated(c.Name)
		if !ok || sameResources(from, c.Resources) {
			return
		}
		r := ContainerResize{Name: c.Name, ID: s.ID, Init: init, Index: idx, From: from, To: *c.Resources.DeepCopy()}
		for _, p := range c.ResizePolicy {
			if p.RestartPolicy != v1.RestartContainer {
				continue
			}
			if !resourceSame(from, c.Resources, p.ResourceName) {
				r.Restart = true
			}
		}
		out = append(out, r)
	}
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			visit(&pod.Spec.InitContainers[i], true, i)
		}
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i], false, i)
	}
	return out
}

func resourceSame(a, b v1.ResourceRequirements, name v1.ResourceName) bool {
	return a.Requests[name].Equal(b.Requests[name]) && a.Limits[name].Equal(b.Limits[name])
}

func sameResources(a, b v1.ResourceRequirements) bool {
	return resourceSame(a, b, v1.ResourceCPU) && resourceSame(a, b, v1.ResourceMemory)
}

// recordActuated notes that a container instance was created with its
// (allocated) resources.
func (m *Manager) recordActuated(ctx context.Context, pod *v1.Pod, name string) {
	if m.opts.Actuated == nil {
		return
	}
	c := findContainer(pod, name)
	if c == nil {
		return
	}
	if err := m.opts.Actuated.SetActuated(pod.UID, name, *c.Resources.DeepCopy()); err != nil {
		klog.FromContext(ctx).Error(err, "Recording a container's resources failed", "pod", klog.KObj(pod), "container", name)
	}
}

// resizePod applies a changed allocation to the pod's running containers
// and cgroup. It reports one step per container; restarted reports that a
// container was replaced (the status the caller holds is stale then).
func (m *Manager) resizePod(ctx context.Context, pod *v1.Pod, status *container.PodStatus) (steps []container.StepResult, restarted bool) {
	if m.opts.Actuated == nil {
		return nil, false
	}
	rs := ComputeResize(pod, status, func(name string) (v1.ResourceRequirements, bool) { return m.opts.Actuated.Actuated(pod.UID, name) })
	if len(rs) == 0 {
		return nil, false
	}
	logger := klog.FromContext(ctx)
	old := make(map[string]v1.ResourceRequirements, len(rs))
	for _, r := range rs {
		old[r.Name] = r.From
	}
	grows := podGrows(withResources(pod, old), pod)
	if grows {
		if err := m.setPodCgroup(pod); err != nil {
			return []container.StepResult{{Action: container.ActionResize, Err: err, Reason: ReasonResizeError, Message: err.Error()}}, false
		}
	}
	for _, r := range rs {
		step := container.StepResult{Action: container.ActionResize, Container: r.Name}
		if r.Restart {
			logger.Info("Restarting container to resize it (resizePolicy RestartContainer)", "pod", klog.KObj(pod), "container", r.Name)
			if err := m.restartForResize(ctx, pod, status, r); err != nil {
				step.Err, step.Reason, step.Message = err, ReasonResizeError, err.Error()
			} else {
				restarted = true
			}
			steps = append(steps, step)
			continue
		}
		c := findContainer(pod, r.Name)
		res := linuxResources(pod, c, m.opts.MachineMemoryCapacity)
		if err := m.runtime.UpdateContainerResources(ctx, r.ID, &runtimeapi.ContainerResources{Linux: res}); err != nil {
			err = fmt.Errorf("updating the resources of container %s: %w", r.Name, err)
			step.Err, step.Reason, step.Message = err, ReasonResizeError, err.Error()
			steps = append(steps, step)
			continue
		}
		logger.Info("Resized container in place", "pod", klog.KObj(pod), "container", r.Name, "resources", r.To)
		m.recordActuated(ctx, pod, r.Name)
		steps = append(steps, step)
	}
	if !grows {
		if err := m.setPodCgroup(pod); err != nil {
			steps = append(steps, container.StepResult{Action: container.ActionResize, Err: err, Reason: ReasonResizeError, Message: err.Error()})
		}
	}
	return steps, restarted
}

func (m *Manager) setPodCgroup(pod *v1.Pod) error {
	if m.opts.PodCgroup == nil {
		return nil
	}
	if err := m.opts.PodCgroup(pod); err != nil {
		return fmt.Errorf("updating the pod's cgroup: %w", err)
	}
	return nil
}

// restartForResize stops the container and starts its next instance with
// the new resources, whatever the pod's restart policy (the API allows
// RestartContainer only where a restart is allowed).
func (m *Manager) restartForResize(ctx context.Context, pod *v1.Pod, status *container.PodStatus, r ContainerResize) error {
	if err := m.killContainer(ctx, pod, r.ID, r.Name, "Container "+r.Name+" resize requires restart", nil, firstIP(status.IPs)); err != nil {
		return err
	}
	sb := status.ReadySandbox()
	if sb == nil {
		return fmt.Errorf("no ready sandbox to restart container %s in", r.Name)
	}
	cfg, err := m.SandboxConfig(pod, sb.Attempt)
	if err != nil {
		return err
	}
	restarts := 0
	if s := status.Latest(r.Name); s != nil {
		restarts = s.RestartCount + 1
	}
	step := m.startContainer(ctx, pod, ContainerToStart{Name: r.Name, Init: r.Init, Index: r.Index, RestartCount: restarts}, sb.ID, cfg, status.IPs, status)
	if step.Err != nil {
		return step.Err
	}
	m.recordActuated(ctx, pod, r.Name)
	return nil
}

// podGrows tells whether the pod's cgroup limits grow (or stay) from old
// to new: then the pod's cgroup goes first, so no container is ever
// limited beyond its pod.
func podGrows(old, cur *v1.Pod) bool {
	o := cgroups.ForPod(old, cgroups.PodOptions{CFSQuota: true})
	n := cgroups.ForPod(cur, cgroups.PodOptions{CFSQuota: true})
	less := func(a, b *int64) bool { // a < b, with nil or -1 as unlimited
		unl := func(p *int64) bool { return p == nil || *p <= 0 }
		if unl(b) {
			return !unl(a)
		}
		return !unl(a) && *a < *b
	}
	return !less(n.Memory, o.Memory) && !less(n.CPUQuota, o.CPUQuota)
}

// withResources is pod with the given containers' resources.
func withResources(pod *v1.Pod, rs map[string]v1.ResourceRequirements) *v1.Pod {
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := rs[cs[i].Name]; ok {
				cs[i].Resources = r
			}
		}
	}
	return out
}
