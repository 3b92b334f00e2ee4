package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

// Waiting reasons of failed container starts (upstream's words).
const (
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonCreatePodSandboxError      = "CreatePodSandboxError"
	ReasonKillPodSandboxError        = "KillPodSandboxError"
	ReasonKillContainerError         = "KillContainerError"
)

// Event reasons.
const (
	EventCreated        = "Created"
	EventStarted        = "Started"
	EventFailed         = "Failed"
	EventKilling        = "Killing"
	EventBackOff        = "BackOff"
	EventSandboxChanged = "SandboxChanged"
	EventFailedSandbox  = "FailedCreatePodSandBox"
	EventFailedKillPod  = "FailedKillPod"
)

// Default masked and read-only paths for unprivileged containers.
var (
	defaultMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

func (m *Manager) containerSecurityContext(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &v1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &v1.SecurityContext{}
	}
	if u := firstInt64(csc.RunAsUser, psc.RunAsUser); u != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *u}
	}
	if g := firstInt64(csc.RunAsGroup, psc.RunAsGroup); g != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *g}
	}
	sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
	}
	sc.Privileged = csc.Privileged != nil && *csc.Privileged
	sc.ReadonlyRootfs = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	if csc.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
	}
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	prof := psc.SeccompProfile
	if csc.SeccompProfile != nil {
		prof = csc.SeccompProfile
	}
	sc.Seccomp = m.seccomp(prof)
	if !sc.Privileged && (csc.ProcMount == nil || *csc.ProcMount == v1.DefaultProcMount) {
		sc.MaskedPaths = defaultMaskedPaths
		sc.ReadonlyPaths = defaultReadonlyPaths
	}
	return sc
}

func firstInt64(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

// ContainerConfig builds the CRI configuration of one container instance.
func (m *Manager) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, imageRef string, sandbox *runtimeapi.PodSandboxConfig, podIPs []string) (*runtimeapi.ContainerConfig, error) {
	var opts ContainerOptions
	if m.opts.ContainerOptions != nil {
		var err error
		if opts, err = m.opts.ContainerOptions(ctx, pod, c); err != nil {
			return nil, err
		}
	}
	env, err := resolveEnv(pod, c, podIPs, opts.Env)
	if err != nil {
		return nil, err
	}
	vals := map[string]string{}
	for _, kv := range env {
		vals[kv[0]] = kv[1]
	}
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, restartCount),
		LogPath:     filepath.Join(c.Name, strconv.Itoa(restartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      opts.Mounts,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(pod, c, m.opts.MachineMemoryCapacity),
			SecurityContext: m.containerSecurityContext(pod, c),
		},
	}
	for _, s := range c.Command {
		cfg.Command = append(cfg.Command, Expand(s, lookup))
	}
	for _, s := range c.Args {
		cfg.Args = append(cfg.Args, Expand(s, lookup))
	}
	for _, kv := range env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: kv[0], Value: kv[1]})
	}
	vm, err := m.volumeMounts(ctx, pod, c, lookup)
	if err != nil {
		return nil, err
	}
	cfg.Mounts = append(cfg.Mounts, vm...)
	if tm, err := m.terminationMessageMount(pod, c, restartCount); err != nil {
		return nil, err
	} else if tm != nil {
		cfg.Mounts = append(cfg.Mounts, tm)
	}
	if err := os.MkdirAll(filepath.Join(sandbox.LogDirectory, c.Name), 0o755); err != nil {
		return nil, fmt.Errorf("creating container log directory: %w", err)
	}
	return cfg, nil
}

// terminationMessageMount creates the host file the container writes its
// termination message to, and mounts it at terminationMessagePath.
func (m *Manager) terminationMessageMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	dir := filepath.Join(m.opts.RootDir, "pods", string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating termination message directory: %w", err)
	}
	p := filepath.Join(dir, fmt.Sprintf("termination-%d-%x", restartCount, m.clock.Now().UnixNano()))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("creating termination message file: %w", err)
	}
	f.Close()
	_ = os.Chmod(p, 0o666)
	return &runtimeapi.Mount{HostPath: p, ContainerPath: c.TerminationMessagePath}, nil
}

// startContainer pulls, creates and starts one container and reports the
// step. The image pull failure is reported with the pull's reason.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, s ContainerToStart, sandboxID string, sandbox *runtimeapi.PodSandboxConfig, podIPs []string) container.StepResult {
	logger := klog.FromContext(ctx)
	var c *v1.Container
	action := container.ActionStart
	if s.Init {
		c = &pod.Spec.InitContainers[s.Index]
		action = container.ActionStartInit
	} else {
		c = &pod.Spec.Containers[s.Index]
	}
	step := container.StepResult{Action: action, Container: c.Name}
	ref := images.ContainerRef(pod, c)

	imageRef, err := m.puller.EnsureImage(ctx, pod, c, sandbox)
	if err != nil {
		step.Action = container.ActionPull
		step.Err = err
		if e, ok := images.AsError(err); ok {
			step.Reason, step.Message, step.RetryAfter = e.Reason, e.Message, e.RetryAfter
		} else {
			step.Reason, step.Message = images.ReasonErrImagePull, err.Error()
		}
		return step
	}

	if s.BackoffKey != "" {
		m.crash.Next(s.BackoffKey, s.FailedAt)
	}

	cfg, err := m.ContainerConfig(ctx, pod, c, s.RestartCount, imageRef, sandbox, podIPs)
	if err != nil {
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonCreateContainerConfigError, err.Error()
		return step
	}
	id, err := m.runtime.CreateContainer(ctx, sandboxID, cfg, sandbox)
	if err != nil {
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonCreateContainerError, err.Error()
		return step
	}
	m.opts.Recorder.Eventf(ref, v1.EventTypeNormal, EventCreated, "Created container: %s", c.Name)
	if err := m.runtime.StartContainer(ctx, id); err != nil {
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonRunContainerError, err.Error()
		return step
	}
	m.opts.Recorder.Eventf(ref, v1.EventTypeNormal, EventStarted, "Started container %s", c.Name)
	logger.V(2).Info("Started container", "pod", klog.KObj(pod), "container", c.Name, "containerID", id, "restartCount", s.RestartCount)
	return step
}
