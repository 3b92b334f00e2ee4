package kuberuntime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/dns"
	"github.com/gokubelet/kubelet/pkg/pod/envvars"
	"github.com/gokubelet/kubelet/pkg/pod/hooks"
	"github.com/gokubelet/kubelet/pkg/pod/securitycontext"
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
	// ReasonContainerCreating: the pod's sandbox is not created yet
	// because its resources are being prepared.
	ReasonContainerCreating = "ContainerCreating"
	// ReasonPostStartHookError: the postStart hook failed and the
	// container was killed.
	ReasonPostStartHookError = "PostStartHookError"
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
	// EventFailedPrepareDynamicResources: a pod's ResourceClaims could
	// not be prepared (upstream's reason).
	EventFailedPrepareDynamicResources = "FailedPrepareDynamicResources"
)

// PodDir is the pod's directory under the kubelet's root: its hosts file,
// container termination message files and volumes live there.
func PodDir(rootDir, uid string) string { return filepath.Join(rootDir, "pods", uid) }

// ContainerConfig builds the CRI configuration of one container instance.
func (m *Manager) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, imageRef string, sandbox *runtimeapi.PodSandboxConfig, podIPs []string) (*runtimeapi.ContainerConfig, error) {
	return m.containerConfig(ctx, pod, c, restartCount, imageRef, sandbox, podIPs, "")
}

// containerConfig builds the configuration; pidTarget, for an ephemeral
// container with a targetContainerName, is the runtime ID of the container
// whose PID namespace it joins.
func (m *Manager) containerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, imageRef string, sandbox *runtimeapi.PodSandboxConfig, podIPs []string, pidTarget string) (*runtimeapi.ContainerConfig, error) {
	var opts ContainerOptions
	if m.opts.ContainerOptions != nil {
		var err error
		if opts, err = m.opts.ContainerOptions(ctx, pod, c); err != nil {
			return nil, err
		}
	}
	env, err := m.containerEnv(ctx, pod, c, podIPs, opts.Env)
	if err != nil {
		return nil, err
	}
	sc, err := securitycontext.Container(pod, c, m.secOpts)
	if err != nil {
		return nil, err
	}
	if securitycontext.NeedsImageUser(pod, c) {
		uid, user, err := m.imageUser(ctx, imageRef)
		if err != nil {
			return nil, err
		}
		if err := securitycontext.VerifyRunAsNonRoot(pod, c, uid, user); err != nil {
			return nil, err
		}
	} else if err := securitycontext.VerifyRunAsNonRoot(pod, c, nil, ""); err != nil {
		return nil, err
	}
	if pidTarget != "" && sc.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		sc.NamespaceOptions.TargetId = pidTarget
	}
	annotations, err := containerAnnotations(pod, c, restartCount)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     envvars.ExpandCommand(c.Command, env),
		Args:        envvars.ExpandCommand(c.Args, env),
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c),
		Annotations: annotations,
		LogPath:     filepath.Join(c.Name, strconv.Itoa(restartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      opts.Mounts,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(pod, c, m.opts.MachineMemoryCapacity),
			SecurityContext: sc,
		},
	}
	cfg.Envs = append(cfg.Envs, opts.PluginEnv...)
	for _, e := range env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	cfg.Devices, cfg.CDIDevices = opts.Devices, opts.CDIDevices
	for k, v := range opts.Annotations {
		if _, own := cfg.Annotations[k]; !own {
			if cfg.Annotations == nil {
				cfg.Annotations = map[string]string{}
			}
			cfg.Annotations[k] = v
		}
	}
	// subPathExpr expands with the container's environment.
	vals := make(map[string]string, len(env))
	for _, e := range env {
		vals[e.Name] = e.Value
	}
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	vm, err := m.volumeMounts(ctx, pod, c, lookup, sandbox)
	if err != nil {
		return nil, err
	}
	cfg.Mounts = append(cfg.Mounts, vm...)
	if dns.MountsHosts(pod, c, podIPs) {
		path, err := dns.WriteHostsFile(PodDir(m.opts.RootDir, string(pod.UID)), pod, podIPs, m.opts.ClusterDomain, m.opts.PodSpec.NodeHostsFile)
		if err != nil {
			return nil, fmt.Errorf("writing the pod's hosts file: %w", err)
		}
		cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: dns.EtcHostsPath, HostPath: path, SelinuxRelabel: true})
	}
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

// imageUser is the user the image runs as: a uid, or a name the runtime
// could not turn into one. No user at all is root.
func (m *Manager) imageUser(ctx context.Context, imageRef string) (*int64, string, error) {
	resp, err := m.image.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
	if err != nil {
		return nil, "", fmt.Errorf("reading the user of image %s: %w", imageRef, err)
	}
	img := resp.GetImage()
	if img == nil {
		return nil, "", fmt.Errorf("reading the user of image %s: image not found", imageRef)
	}
	if img.GetUid() != nil {
		uid := img.GetUid().GetValue()
		return &uid, "", nil
	}
	if img.GetUsername() != "" {
		return nil, img.GetUsername(), nil
	}
	root := int64(0)
	return &root, "", nil
}

// terminationMessageMount creates the host file the container writes its
// termination message to, and mounts it at terminationMessagePath. The
// file is writable by any user, so containers running as non-root can
// write it.
func (m *Manager) terminationMessageMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, error) {
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	dir := filepath.Join(PodDir(m.opts.RootDir, string(pod.UID)), "containers", c.Name)
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
	return &runtimeapi.Mount{HostPath: p, ContainerPath: c.TerminationMessagePath, SelinuxRelabel: true}, nil
}

// specOf returns the container spec a start refers to.
func specOf(pod *v1.Pod, s ContainerToStart) *v1.Container {
	switch {
	case s.Ephemeral:
		c := v1.Container(pod.Spec.EphemeralContainers[s.Index].EphemeralContainerCommon)
		return &c
	case s.Init:
		return &pod.Spec.InitContainers[s.Index]
	}
	return &pod.Spec.Containers[s.Index]
}

// startContainer pulls, creates and starts one container, runs its
// postStart hook, and reports the step. The image pull failure is
// reported with the pull's reason. status is the pod's runtime state (an
// ephemeral container's target is looked up in it).
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, s ContainerToStart, sandboxID string, sandbox *runtimeapi.PodSandboxConfig, podIPs []string, status *container.PodStatus) container.StepResult {
	logger := klog.FromContext(ctx)
	c := specOf(pod, s)
	action := container.ActionStart
	if s.Init {
		action = container.ActionStartInit
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

	target := ""
	if s.Ephemeral {
		if name := pod.Spec.EphemeralContainers[s.Index].TargetContainerName; name != "" {
			t := status.Latest(name)
			if t == nil {
				err := fmt.Errorf("unable to find target container %v", name)
				m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
				step.Err, step.Reason, step.Message = err, ReasonCreateContainerConfigError, err.Error()
				return step
			}
			target = t.ID
		}
	}

	restartCount := s.RestartCount
	if status.Latest(c.Name) == nil {
		// No instance left in the runtime (its state was lost, e.g. after
		// a reboot): continue after the newest log file, as upstream does,
		// rather than write over 0.log.
		restartCount = restartCountFromLogs(filepath.Join(PodLogDir(m.opts.PodLogsDir, pod.Namespace, pod.Name, string(pod.UID)), c.Name))
	}
	cfg, err := m.containerConfig(ctx, pod, c, restartCount, imageRef, sandbox, podIPs, target)
	if e, ok := images.AsError(err); ok {
		// An image volume's image could not be made present: the
		// container waits as for its own image.
		step.Action, step.Err = container.ActionPull, err
		step.Reason, step.Message, step.RetryAfter = e.Reason, e.Message, e.RetryAfter
		return step
	}
	if err != nil {
		logger.Info("Container configuration failed", "pod", klog.KObj(pod), "container", c.Name, "err", err)
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonCreateContainerConfigError, err.Error()
		return step
	}
	// One slot of the start gate for the create and the start.
	release, err := m.opts.StartGate.Acquire(ctx, startKey(pod))
	if err != nil {
		err = fmt.Errorf("waiting for the runtime to take the container: %w", err)
		step.Err, step.Reason, step.Message = err, ReasonCreateContainerError, err.Error()
		return step
	}
	id, err := m.runtime.CreateContainer(ctx, sandboxID, cfg, sandbox)
	countImageVolumes(pod, c, err)
	if err != nil {
		release()
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonCreateContainerError, err.Error()
		return step
	}
	m.opts.Recorder.Eventf(ref, v1.EventTypeNormal, EventCreated, "Created container: %s", c.Name)
	err = m.runtime.StartContainer(ctx, id)
	release()
	if err != nil {
		m.opts.Recorder.Eventf(ref, v1.EventTypeWarning, EventFailed, "Error: %v", err)
		step.Err, step.Reason, step.Message = err, ReasonRunContainerError, err.Error()
		return step
	}
	m.opts.Recorder.Eventf(ref, v1.EventTypeNormal, EventStarted, "Started container %s", c.Name)
	if err := m.linkContainerLog(pod.Name, pod.Namespace, c.Name, id, filepath.Join(sandbox.GetLogDirectory(), cfg.GetLogPath())); err != nil {
		logger.Info("Linking the container log failed", "pod", klog.KObj(pod), "container", c.Name, "err", err)
	}
	logger.V(2).Info("Started container", "pod", klog.KObj(pod), "container", c.Name, "containerID", id, "restartCount", s.RestartCount)

	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if msg, err := m.runPostStart(ctx, pod, c, id, podIPs); err != nil {
			step.Err, step.Reason, step.Message = err, ReasonPostStartHookError, msg
			return step
		}
	}
	return step
}

// runPostStart runs the postStart hook of a container just started; the
// next container does not start until it returns. A failed hook kills the
// container (event FailedPostStartHook; the message, which may hold
// secrets, goes only to the log and the container's waiting reason).
func (m *Manager) runPostStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, podIPs []string) (string, error) {
	logger := klog.FromContext(ctx)
	msg, err := m.hooks.Run(ctx, pod, c, id, firstIP(podIPs), c.Lifecycle.PostStart, 0)
	if err == nil {
		return "", nil
	}
	logger.Error(err, "PostStart hook failed", "pod", klog.KObj(pod), "podUID", pod.UID, "container", c.Name, "containerID", id, "message", msg)
	m.opts.Recorder.Event(images.ContainerRef(pod, c), v1.EventTypeWarning, hooks.EventFailedPostStartHook, "PostStartHook failed")
	if kerr := m.killContainer(ctx, pod, id, c.Name, "FailedPostStartHook", nil, firstIP(podIPs)); kerr != nil {
		logger.Error(kerr, "Killing a container whose postStart hook failed", "pod", klog.KObj(pod), "container", c.Name, "containerID", id)
	}
	return msg, err
}

func firstIP(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// preStopAnnotation carries the preStop handler on the container, so a
// kubelet that no longer has the pod (restarted after it was deleted)
// still runs it, as upstream.
func preStopAnnotation(c *v1.Container) (string, error) {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return "", nil
	}
	b, err := json.Marshal(c.Lifecycle.PreStop)
	if err != nil {
		return "", fmt.Errorf("encoding the preStop handler: %w", err)
	}
	return string(b), nil
}

// restartCountFromLogs returns the restart count a new instance gets when
// the runtime has none: one more than the highest <n>.log in the
// container's log directory, 0 when there is none.
func restartCountFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	next := 0
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err != nil || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if n+1 > next {
			next = n + 1
		}
	}
	return next
}
