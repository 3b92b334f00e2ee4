// Package mock is the in-memory provider: pods "run" as entries in a map
// that go Running after a start delay (at once without one: a single
// notification, Running) and disappear after a stop delay,
// with configurable call latencies and injected failure rates. It is what
// the provider test suite, the engine's tests, the end-to-end failure test
// and the scale benchmark run against (a process with only mock virtual
// nodes: see docs/virtual-nodes.md).
//
// It is built to make 10,000 pods cheap: one map entry and at most one
// timer per pod, status pushed through the notifier (no polling), lists
// answered from memory.
//
// Pods can act out a lifecycle through annotations:
//
//	mock.gokubelet.io/exit-after: 2s   every container exits after 2s
//	mock.gokubelet.io/exit-code: "1"   with this code (default 0)
//
// restartPolicy then decides, as a kubelet would: Never (or OnFailure
// after exit 0) ends the pod Succeeded or Failed, otherwise the containers
// restart (restartCount grows, lastState keeps the exit).
//
// Streams: logs are a few lines per container; exec echoes for "echo",
// copies stdin to stdout for "cat", fails with the code for "exit N" (also
// as sh -c "exit N"), and writes the command line for anything else;
// attach copies stdin to stdout; port-forward echoes what it receives.
package mock

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// Annotations a pod uses to act out a lifecycle.
const (
	AnnotationExitAfter = "mock.gokubelet.io/exit-after"
	AnnotationExitCode  = "mock.gokubelet.io/exit-code"
)

// Version is reported as the node's container runtime version.
const Version = "mock://v1"

// ErrInjected is the cause of injected failures.
var ErrInjected = fmt.Errorf("mock: injected failure")

// Provider is the mock provider. Build it with New.
type Provider struct {
	cfg      Config
	nodeName string
	capacity v1.ResourceList

	randMu sync.Mutex
	rand   *rand.Rand

	mu     sync.Mutex
	pods   map[string]*entry // namespace/name
	notify func(*v1.Pod)
	nextIP uint32
	calls  map[string]int

	// started is when the provider was made (the node's start time);
	// cpuNano and memBytes the configured usage of a running container,
	// haveUsage whether there is one (Config.Usage).
	started           time.Time
	cpuNano, memBytes uint64
	haveUsage         bool
}

type entry struct {
	pod   *v1.Pod // spec as given, status as it is now
	timer *time.Timer
	gone  bool
}

// New builds the mock provider (provider.Factory). With notifier: false in
// its config, the result has no NotifyPods, so the engine polls it.
func New(_ context.Context, ic provider.InitConfig) (provider.Provider, error) {
	cfg, err := ParseConfig(ic.Config)
	if err != nil {
		return nil, err
	}
	p := NewWithConfig(ic.NodeName, cfg)
	if cfg.Notifier != nil && !*cfg.Notifier {
		return Polled{p}, nil
	}
	return p, nil
}

// NewWithConfig builds the mock provider from a parsed Config.
func NewWithConfig(nodeName string, cfg Config) *Provider {
	capacity := v1.ResourceList{}
	for k, v := range DefaultCapacity {
		capacity[v1.ResourceName(k)] = resource.MustParse(v)
	}
	for k, v := range cfg.Capacity {
		capacity[v1.ResourceName(k)] = resource.MustParse(v)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	p := &Provider{
		cfg:      cfg,
		nodeName: nodeName,
		capacity: capacity,
		rand:     rand.New(rand.NewSource(seed)),
		pods:     map[string]*entry{},
		nextIP:   1,
		calls:    map[string]int{},
		started:  time.Now(),
	}
	if u := cfg.Usage; u != nil {
		p.haveUsage = true
		if q, err := resource.ParseQuantity(u.CPU); err == nil && q.Sign() > 0 {
			p.cpuNano = uint64(q.ScaledValue(resource.Nano))
		}
		if q, err := resource.ParseQuantity(u.Memory); err == nil && q.Sign() > 0 {
			p.memBytes = uint64(q.Value())
		}
	}
	return p
}

// Calls reports how many times each method was called (tests).
func (p *Provider) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// SetFailureRate changes the create failure rate at run time (tests).
func (p *Provider) SetFailureRate(create float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.FailureRate.Create = create
}

// Lose forgets a pod without notice, as a backend that lost it would
// (tests of the engine's lost-pod handling).
func (p *Provider) Lose(namespace, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.pods[namespace+"/"+name]; ok {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(p.pods, namespace+"/"+name)
	}
}

func key(ns, name string) string { return ns + "/" + name }

// call counts the call, waits its latency and draws an injected failure.
func (p *Provider) call(ctx context.Context, method string, latency time.Duration, rate float64) error {
	p.mu.Lock()
	p.calls[method]++
	p.mu.Unlock()
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return errdefs.Retryable(ctx.Err())
		case <-t.C:
		}
	}
	if rate <= 0 {
		return nil
	}
	p.randMu.Lock()
	fail := p.rand.Float64() < rate
	p.randMu.Unlock()
	if !fail {
		return nil
	}
	err := fmt.Errorf("%s: %w", method, ErrInjected)
	switch p.cfg.FailureClass {
	case ClassInvalid:
		return errdefs.Invalid(err)
	case ClassTerminal:
		return errdefs.Terminal(err)
	}
	return errdefs.Retryable(err)
}

// NotifyPods registers the callback (provider.PodNotifier).
func (p *Provider) NotifyPods(_ context.Context, notify func(*v1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
}

// emitLocked passes a copy of the pod to the notifier. Called with p.mu
// held: the callback never blocks.
func (p *Provider) emitLocked(pod *v1.Pod) {
	if p.notify != nil {
		p.notify(pod.DeepCopy())
	}
}

// CreatePod records the pod and schedules its start.
func (p *Provider) CreatePod(ctx context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	rate := p.cfg.FailureRate.Create
	p.mu.Unlock()
	if err := p.call(ctx, "CreatePod", p.cfg.Latency.Create.Duration, rate); err != nil {
		return err
	}
	if err := checkExitAnnotations(pod); err != nil {
		return errdefs.Invalid(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(pod.Namespace, pod.Name)
	if e, ok := p.pods[k]; ok && !e.gone {
		if e.pod.UID == pod.UID {
			return nil // idempotent
		}
		return errdefs.Retryable(fmt.Errorf("mock: pod %s still runs with UID %s", k, e.pod.UID))
	}
	cp := pod.DeepCopy()
	now := metav1.Now()
	cp.Status = v1.PodStatus{Phase: v1.PodPending, StartTime: &now}
	for _, c := range cp.Spec.Containers {
		cp.Status.ContainerStatuses = append(cp.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}},
		})
	}
	e := &entry{pod: cp}
	p.pods[k] = e
	if p.cfg.StartDelay.Duration <= 0 {
		// Running at once: one notification, not a Pending one and
		// a Running one right after it (which a kubelet would write as
		// two status updates).
		p.startLocked(k, e)
		return nil
	}
	p.emitLocked(cp)
	e.timer = time.AfterFunc(p.cfg.StartDelay.Duration, func() { p.start(k, cp.UID) })
	return nil
}

func checkExitAnnotations(pod *v1.Pod) error {
	if v, ok := pod.Annotations[AnnotationExitAfter]; ok {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return fmt.Errorf("annotation %s: %q is not a duration", AnnotationExitAfter, v)
		}
	}
	if v, ok := pod.Annotations[AnnotationExitCode]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return fmt.Errorf("annotation %s: %q is not an exit code", AnnotationExitCode, v)
		}
	}
	return nil
}

// start turns the pod Running, and schedules its exit when annotated.
func (p *Provider) start(k string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[k]
	if !ok || e.gone || e.pod.UID != uid || e.pod.DeletionTimestamp != nil {
		return
	}
	p.startLocked(k, e)
}

// startLocked is start with p.mu held and the entry looked up.
func (p *Provider) startLocked(k string, e *entry) {
	pod := e.pod
	now := metav1.Now()
	if pod.Status.PodIP == "" {
		ip := fmt.Sprintf("10.%d.%d.%d", 200+(p.nextIP>>16)%50, (p.nextIP>>8)&0xff, p.nextIP&0xff)
		p.nextIP++
		pod.Status.PodIP = ip
		pod.Status.PodIPs = []v1.PodIP{{IP: ip}}
	}
	pod.Status.Phase = v1.PodRunning
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.State.Terminated != nil {
			cs.LastTerminationState = cs.State
			cs.RestartCount++
		}
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}
		cs.Ready, cs.Started = true, ptrTo(true)
		cs.ContainerID = "mock://" + string(pod.UID) + "/" + cs.Name
		cs.ImageID = "mock://" + cs.Image
	}
	e.pod = pod.DeepCopy()
	p.emitLocked(e.pod)
	if v, ok := pod.Annotations[AnnotationExitAfter]; ok {
		d, _ := time.ParseDuration(v)
		code, _ := strconv.ParseInt(pod.Annotations[AnnotationExitCode], 10, 32)
		e.timer = time.AfterFunc(d, func() { p.exit(k, pod.UID, int32(code)) })
	}
}

// exit terminates every container with code, then applies the restart
// rule (podspec.RestartsAfterExit): the pod starts again when any of its
// containers would restart, else it ends.
func (p *Provider) exit(k string, uid types.UID, code int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[k]
	if !ok || e.gone || e.pod.UID != uid || e.pod.DeletionTimestamp != nil {
		return
	}
	pod := e.pod.DeepCopy()
	terminateContainers(pod, code)
	restarts := false
	for i := range pod.Spec.Containers {
		restarts = restarts || podspec.RestartsAfterExit(pod, &pod.Spec.Containers[i], false, code)
	}
	switch {
	case !restarts:
		pod.Status.Phase = v1.PodSucceeded
		if code != 0 {
			pod.Status.Phase = v1.PodFailed
		}
		e.pod = pod
		p.emitLocked(pod)
	default:
		e.pod = pod
		p.emitLocked(pod)
		e.timer = time.AfterFunc(p.cfg.StartDelay.Duration, func() { p.start(k, uid) })
	}
}

func terminateContainers(pod *v1.Pod, code int32) {
	now := metav1.Now()
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.State.Terminated != nil {
			continue
		}
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.Ready, cs.Started = false, ptrTo(false)
	}
}

// UpdatePod takes the new spec's images and metadata.
func (p *Provider) UpdatePod(ctx context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	rate := p.cfg.FailureRate.Update
	p.mu.Unlock()
	if err := p.call(ctx, "UpdatePod", p.cfg.Latency.Update.Duration, rate); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(pod.Namespace, pod.Name)]
	if !ok || e.gone || e.pod.UID != pod.UID {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	cp := e.pod.DeepCopy()
	cp.Labels, cp.Annotations = pod.Labels, pod.Annotations
	cp.Spec = *pod.Spec.DeepCopy()
	for i := range cp.Status.ContainerStatuses {
		if c := podspec.FindIn(cp.Spec.Containers, cp.Status.ContainerStatuses[i].Name); c != nil {
			cp.Status.ContainerStatuses[i].Image = c.Image
		}
	}
	e.pod = cp
	p.emitLocked(cp)
	return nil
}

// DeletePod stops the pod after the stop delay (bounded by the grace
// period), then forgets it and notifies its last status.
func (p *Provider) DeletePod(ctx context.Context, pod *v1.Pod) error {
	p.mu.Lock()
	rate := p.cfg.FailureRate.Delete
	p.mu.Unlock()
	if err := p.call(ctx, "DeletePod", p.cfg.Latency.Delete.Duration, rate); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(pod.Namespace, pod.Name)
	e, ok := p.pods[k]
	if !ok || e.gone || (pod.UID != "" && e.pod.UID != pod.UID) {
		return provider.NotFound(pod.Namespace, pod.Name)
	}
	if e.pod.DeletionTimestamp != nil {
		return nil // already stopping
	}
	delay := p.cfg.StopDelay.Duration
	if g := pod.DeletionGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < delay {
		delay = time.Duration(*g) * time.Second
	}
	if g := pod.DeletionGracePeriodSeconds; g == nil && pod.DeletionTimestamp == nil {
		delay = 0
	}
	cp := e.pod.DeepCopy()
	now := metav1.Now()
	cp.DeletionTimestamp = &now
	e.pod = cp
	if e.timer != nil {
		e.timer.Stop()
	}
	uid := cp.UID
	e.timer = time.AfterFunc(delay, func() { p.remove(k, uid) })
	return nil
}

func (p *Provider) remove(k string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[k]
	if !ok || e.pod.UID != uid {
		return
	}
	last := e.pod.DeepCopy()
	terminateContainers(last, 0)
	if last.Status.Phase != v1.PodFailed {
		last.Status.Phase = v1.PodSucceeded
	}
	e.gone = true
	delete(p.pods, k)
	p.emitLocked(last)
}

// GetPod returns a copy of the pod.
func (p *Provider) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	if err := p.call(ctx, "GetPod", p.cfg.Latency.Get.Duration, 0); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, provider.NotFound(namespace, name)
	}
	return e.pod.DeepCopy(), nil
}

// GetPodStatus returns a copy of the pod's status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*v1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// ListPods returns copies of every pod.
func (p *Provider) ListPods(ctx context.Context) ([]*v1.Pod, error) {
	if err := p.call(ctx, "ListPods", p.cfg.Latency.List.Duration, 0); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*v1.Pod, 0, len(p.pods))
	for _, e := range p.pods {
		out = append(out, e.pod.DeepCopy())
	}
	return out, nil
}

// NodeStatus reports the configured capacity; Ready unless notReady is set.
func (p *Provider) NodeStatus(context.Context) (provider.NodeStatus, error) {
	st := provider.NodeStatus{
		Capacity: p.capacity.DeepCopy(),
		NodeInfo: v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", OSImage: "gokubelet mock provider", ContainerRuntimeVersion: Version},
		Labels:   map[string]string{"gokubelet.io/provider": "mock"},
	}
	if p.cfg.NotReady != "" {
		st.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "ProviderNotReady", Message: p.cfg.NotReady}}
	}
	return st, nil
}

// running returns the pod if it runs container (or any container when
// container is "").
func (p *Provider) running(namespace, name, container string) (*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, provider.NotFound(namespace, name)
	}
	if container != "" && podspec.FindIn(e.pod.Spec.Containers, container) == nil && podspec.FindIn(e.pod.Spec.InitContainers, container) == nil {
		return nil, errdefs.NotFound(fmt.Errorf("container %q not found in pod %s/%s", container, namespace, name))
	}
	return e.pod.DeepCopy(), nil
}

// GetContainerLogs returns a few lines about the container.
func (p *Provider) GetContainerLogs(_ context.Context, namespace, name, container string, opts v1.PodLogOptions) (io.ReadCloser, error) {
	pod, err := p.running(namespace, name, container)
	if err != nil {
		return nil, err
	}
	lines := []string{
		fmt.Sprintf("mock: container %s of pod %s/%s created", container, namespace, name),
		fmt.Sprintf("mock: container %s running on node %s", container, p.nodeName),
		fmt.Sprintf("mock: pod UID %s", pod.UID),
	}
	if opts.Previous {
		lines = []string{fmt.Sprintf("mock: previous instance of container %s", container)}
	}
	if opts.TailLines != nil && int(*opts.TailLines) < len(lines) {
		lines = lines[len(lines)-int(*opts.TailLines):]
	}
	s := strings.Join(lines, "\n") + "\n"
	if opts.LimitBytes != nil && int(*opts.LimitBytes) < len(s) {
		s = s[:*opts.LimitBytes]
	}
	return io.NopCloser(strings.NewReader(s)), nil
}

// RunInContainer acts out a few commands (see the package doc).
func (p *Provider) RunInContainer(ctx context.Context, namespace, name, container string, cmd []string, a provider.AttachIO) error {
	if _, err := p.running(namespace, name, container); err != nil {
		return err
	}
	defer closeAll(a)
	if len(cmd) == 0 {
		return errdefs.Invalid(fmt.Errorf("no command"))
	}
	if len(cmd) == 3 && (cmd[0] == "sh" || cmd[0] == "/bin/sh") && cmd[1] == "-c" {
		cmd = strings.Fields(cmd[2])
	}
	switch cmd[0] {
	case "echo":
		if a.Stdout != nil {
			_, err := io.WriteString(a.Stdout, strings.Join(cmd[1:], " ")+"\n")
			return err
		}
		return nil
	case "cat":
		if a.Stdin != nil && a.Stdout != nil {
			return copyCtx(ctx, a.Stdout, a.Stdin)
		}
		return nil
	case "exit":
		code := 0
		if len(cmd) > 1 {
			code, _ = strconv.Atoi(cmd[1])
		}
		if code != 0 {
			return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
		}
		return nil
	}
	if a.Stdout != nil {
		_, err := io.WriteString(a.Stdout, strings.Join(cmd, " ")+"\n")
		return err
	}
	return nil
}

// AttachToContainer copies stdin to stdout.
func (p *Provider) AttachToContainer(ctx context.Context, namespace, name, container string, a provider.AttachIO) error {
	if _, err := p.running(namespace, name, container); err != nil {
		return err
	}
	defer closeAll(a)
	if a.Stdin == nil || a.Stdout == nil {
		<-ctx.Done()
		return nil
	}
	return copyCtx(ctx, a.Stdout, a.Stdin)
}

// PortForward echoes what it receives on any port.
func (p *Provider) PortForward(ctx context.Context, namespace, name string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if _, err := p.running(namespace, name, ""); err != nil {
		return err
	}
	if port <= 0 || port > 65535 {
		return errdefs.Invalid(fmt.Errorf("invalid port %d", port))
	}
	return copyCtx(ctx, stream, stream)
}

// GetStatsSummary reports the node and its running pods. CPU and memory
// are the configured usage (Config.Usage) of each running container,
// summed for pods and the node; without a configured usage there are no
// CPU or memory figures (no zeros that look measured).
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := metav1.Now()
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.nodeName, StartTime: metav1.NewTime(p.started)}}
	cpuNano, memBytes, usage := p.cpuNano, p.memBytes, p.haveUsage
	var nodeCPU, nodeCum, nodeMem uint64
	for _, e := range p.pods {
		if e.gone || e.pod.Status.Phase != v1.PodRunning {
			continue
		}
		ps := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: e.pod.Name, Namespace: e.pod.Namespace, UID: string(e.pod.UID)}}
		if e.pod.Status.StartTime != nil {
			ps.StartTime = *e.pod.Status.StartTime
		}
		var podCPU, podCum, podMem uint64
		for _, cs := range e.pod.Status.ContainerStatuses {
			if cs.State.Running == nil {
				continue
			}
			c := statsv1alpha1.ContainerStats{Name: cs.Name, StartTime: cs.State.Running.StartedAt}
			if usage {
				cum := cpuNano * uint64(max(now.Sub(cs.State.Running.StartedAt.Time), 0).Seconds())
				c.CPU = &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: ptrTo(cpuNano), UsageCoreNanoSeconds: ptrTo(cum)}
				c.Memory = &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: ptrTo(memBytes), UsageBytes: ptrTo(memBytes)}
				podCPU, podCum, podMem = podCPU+cpuNano, podCum+cum, podMem+memBytes
			}
			ps.Containers = append(ps.Containers, c)
		}
		if usage {
			ps.CPU = &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: ptrTo(podCPU), UsageCoreNanoSeconds: ptrTo(podCum)}
			ps.Memory = &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: ptrTo(podMem), UsageBytes: ptrTo(podMem)}
			nodeCPU, nodeCum, nodeMem = nodeCPU+podCPU, nodeCum+podCum, nodeMem+podMem
		}
		s.Pods = append(s.Pods, ps)
	}
	if usage {
		s.Node.CPU = &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: ptrTo(nodeCPU), UsageCoreNanoSeconds: ptrTo(nodeCum)}
		s.Node.Memory = &statsv1alpha1.MemoryStats{Time: now, WorkingSetBytes: ptrTo(nodeMem), UsageBytes: ptrTo(nodeMem)}
	}
	return s, nil
}

// copyCtx copies until src ends or ctx ends.
func copyCtx(ctx context.Context, dst io.Writer, src io.Reader) error {
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(dst, src)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return nil
	}
}

func closeAll(a provider.AttachIO) {
	if a.Stdout != nil {
		_ = a.Stdout.Close()
	}
	if a.Stderr != nil {
		_ = a.Stderr.Close()
	}
}

func ptrTo[T any](v T) *T { return &v }

// Polled is the mock provider without push notifications: the engine
// must poll it (provider.PodNotifier is not implemented).
type Polled struct{ p *Provider }

// Mock returns the underlying provider (tests).
func (w Polled) Mock() *Provider { return w.p }

func (w Polled) CreatePod(ctx context.Context, pod *v1.Pod) error { return w.p.CreatePod(ctx, pod) }
func (w Polled) UpdatePod(ctx context.Context, pod *v1.Pod) error { return w.p.UpdatePod(ctx, pod) }
func (w Polled) DeletePod(ctx context.Context, pod *v1.Pod) error { return w.p.DeletePod(ctx, pod) }
func (w Polled) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	return w.p.GetPod(ctx, ns, name)
}
func (w Polled) GetPodStatus(ctx context.Context, ns, name string) (*v1.PodStatus, error) {
	return w.p.GetPodStatus(ctx, ns, name)
}
func (w Polled) ListPods(ctx context.Context) ([]*v1.Pod, error) { return w.p.ListPods(ctx) }
func (w Polled) NodeStatus(ctx context.Context) (provider.NodeStatus, error) {
	return w.p.NodeStatus(ctx)
}
func (w Polled) GetContainerLogs(ctx context.Context, ns, name, c string, o v1.PodLogOptions) (io.ReadCloser, error) {
	return w.p.GetContainerLogs(ctx, ns, name, c, o)
}
func (w Polled) RunInContainer(ctx context.Context, ns, name, c string, cmd []string, a provider.AttachIO) error {
	return w.p.RunInContainer(ctx, ns, name, c, cmd, a)
}
func (w Polled) AttachToContainer(ctx context.Context, ns, name, c string, a provider.AttachIO) error {
	return w.p.AttachToContainer(ctx, ns, name, c, a)
}
func (w Polled) PortForward(ctx context.Context, ns, name string, port int32, s io.ReadWriteCloser) error {
	return w.p.PortForward(ctx, ns, name, port, s)
}

var (
	_ provider.Provider            = (*Provider)(nil)
	_ provider.PodNotifier         = (*Provider)(nil)
	_ provider.LogsProvider        = (*Provider)(nil)
	_ provider.ExecProvider        = (*Provider)(nil)
	_ provider.AttachProvider      = (*Provider)(nil)
	_ provider.PortForwardProvider = (*Provider)(nil)
	_ provider.StatsProvider       = (*Provider)(nil)
	_ provider.Provider            = Polled{}
	_ provider.ExecProvider        = Polled{}
)
