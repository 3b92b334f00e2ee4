package kuberuntime

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// The caches hold the details of CRI objects that only a per-object status
// call returns (exit code, times, sandbox IPs). An object's details do not
// change while its listed state stays the same, so a relist asks for them
// again only for new objects or objects whose state changed.
type cachedContainer struct {
	state  runtimeapi.ContainerState
	status container.Status
}

type cachedSandbox struct {
	state  runtimeapi.PodSandboxState
	status container.SandboxStatus
}

// isNotFound reports whether a CRI call failed because the object is gone.
func isNotFound(err error) bool {
	return errdefs.IsNotFound(errdefs.FromGRPC(err))
}

// GetPodStatus implements container.Runtime.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	now := m.clock.Now()
	sel := map[string]string{LabelPodUID: string(uid)}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes of pod %s: %w", uid, err)
	}
	ctrs, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing containers of pod %s: %w", uid, err)
	}
	ps := &container.PodStatus{UID: uid, Name: name, Namespace: namespace, Timestamp: now}
	if err := m.fill(ctx, ps, sandboxes, ctrs); err != nil {
		return nil, err
	}
	return ps, nil
}

// fill converts the listed objects of one pod into ps, asking for details
// only when the cache cannot answer.
func (m *Manager) fill(ctx context.Context, ps *container.PodStatus, sandboxes []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) error {
	for _, sb := range sandboxes {
		if ps.Name == "" {
			if id, ok := identityFromLabels(sb.Labels); ok {
				ps.Name, ps.Namespace = id.Name, id.Namespace
			}
		}
		s, err := m.sandboxStatus(ctx, sb)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return err
		}
		ps.Sandboxes = append(ps.Sandboxes, s)
	}
	sort.SliceStable(ps.Sandboxes, func(i, j int) bool { return ps.Sandboxes[i].CreatedAt.After(ps.Sandboxes[j].CreatedAt) })
	for _, c := range ctrs {
		if ps.Name == "" {
			if id, ok := identityFromLabels(c.Labels); ok {
				ps.Name, ps.Namespace = id.Name, id.Namespace
			}
		}
		s, err := m.containerStatus(ctx, c)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return err
		}
		ps.Containers = append(ps.Containers, s)
	}
	sort.SliceStable(ps.Containers, func(i, j int) bool { return ps.Containers[i].CreatedAt.After(ps.Containers[j].CreatedAt) })
	if sb := ps.ReadySandbox(); sb != nil {
		ps.IPs = sb.IPs
	}
	return nil
}

func (m *Manager) sandboxStatus(ctx context.Context, sb *runtimeapi.PodSandbox) (container.SandboxStatus, error) {
	m.cacheMu.Lock()
	c, ok := m.sandboxCache[sb.Id]
	m.cacheMu.Unlock()
	if ok && c.state == sb.State {
		return c.status, nil
	}
	resp, err := m.runtime.PodSandboxStatus(ctx, sb.Id, false)
	if err != nil {
		return container.SandboxStatus{}, fmt.Errorf("PodSandboxStatus %s: %w", sb.Id, err)
	}
	st := resp.GetStatus()
	out := container.SandboxStatus{
		ID:        sb.Id,
		State:     sandboxState(st.GetState()),
		CreatedAt: time.Unix(0, st.GetCreatedAt()),
		Attempt:   st.GetMetadata().GetAttempt(),
		HostNetwork: st.GetLinux().GetNamespaces().GetOptions().GetNetwork() ==
			runtimeapi.NamespaceMode_NODE,
	}
	if ip := st.GetNetwork().GetIp(); ip != "" && !out.HostNetwork {
		out.IPs = append(out.IPs, ip)
		for _, a := range st.GetNetwork().GetAdditionalIps() {
			out.IPs = append(out.IPs, a.GetIp())
		}
	}
	m.cacheMu.Lock()
	m.sandboxCache[sb.Id] = cachedSandbox{state: st.GetState(), status: out}
	m.cacheMu.Unlock()
	return out, nil
}

func (m *Manager) containerStatus(ctx context.Context, c *runtimeapi.Container) (container.Status, error) {
	m.cacheMu.Lock()
	cc, ok := m.ctrCache[c.Id]
	m.cacheMu.Unlock()
	if ok && cc.state == c.State {
		return cc.status, nil
	}
	resp, err := m.runtime.ContainerStatus(ctx, c.Id, false)
	if err != nil {
		return container.Status{}, fmt.Errorf("ContainerStatus %s: %w", c.Id, err)
	}
	st := resp.GetStatus()
	info := containerInfoFrom(c.Labels, c.Annotations, c.Metadata)
	out := container.Status{
		ID:           c.Id,
		Name:         info.Name,
		State:        containerState(st.GetState()),
		CreatedAt:    time.Unix(0, st.GetCreatedAt()),
		ExitCode:     st.GetExitCode(),
		Reason:       st.GetReason(),
		Message:      st.GetMessage(),
		Image:        info.Image,
		ImageRef:     st.GetImageRef(),
		Hash:         info.Hash,
		RestartCount: info.RestartCount,
		SandboxID:    c.PodSandboxId,
	}
	if out.Image == "" {
		out.Image = st.GetImage().GetImage()
	}
	if u := st.GetUser().GetLinux(); u != nil {
		out.User = &container.LinuxUser{UID: u.GetUid(), GID: u.GetGid(), SupplementalGroups: u.GetSupplementalGroups()}
	}
	if st.GetStartedAt() > 0 {
		out.StartedAt = time.Unix(0, st.GetStartedAt())
	}
	if st.GetFinishedAt() > 0 {
		out.FinishedAt = time.Unix(0, st.GetFinishedAt())
	}
	if out.State == container.StateExited {
		// The runtime's message, then the container's own, as upstream.
		if msg := terminationMessage(st); msg != "" {
			if out.Message != "" {
				out.Message += ": "
			}
			out.Message += msg
		}
	}
	m.cacheMu.Lock()
	m.ctrCache[c.Id] = cachedContainer{state: st.GetState(), status: out}
	m.cacheMu.Unlock()
	return out, nil
}

func sandboxState(s runtimeapi.PodSandboxState) container.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return container.SandboxReady
	}
	return container.SandboxNotReady
}

func containerState(s runtimeapi.ContainerState) container.State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return container.StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return container.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return container.StateExited
	default:
		return container.StateUnknown
	}
}

// Relist implements container.Runtime: two list calls, plus a status call
// for each object that is new or changed state since the last relist.
func (m *Manager) Relist(ctx context.Context) ([]*container.PodStatus, error) {
	now := m.clock.Now()
	sandboxes, err := m.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	ctrs, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	type group struct {
		id  podIdentity
		sbs []*runtimeapi.PodSandbox
		cs  []*runtimeapi.Container
	}
	groups := map[types.UID]*group{}
	var order []types.UID
	get := func(id podIdentity) *group {
		g := groups[id.UID]
		if g == nil {
			g = &group{id: id}
			groups[id.UID] = g
			order = append(order, id.UID)
		}
		return g
	}
	seen := map[string]bool{}
	for _, sb := range sandboxes {
		seen[sb.Id] = true
		if id, ok := identityFromLabels(sb.Labels); ok {
			g := get(id)
			g.sbs = append(g.sbs, sb)
		}
	}
	for _, c := range ctrs {
		seen[c.Id] = true
		if id, ok := identityFromLabels(c.Labels); ok {
			g := get(id)
			g.cs = append(g.cs, c)
		}
	}
	var out []*container.PodStatus
	for _, uid := range order {
		g := groups[uid]
		ps := &container.PodStatus{UID: uid, Name: g.id.Name, Namespace: g.id.Namespace, Timestamp: now}
		if err := m.fill(ctx, ps, g.sbs, g.cs); err != nil {
			klog.FromContext(ctx).Error(err, "Reading pod status failed", "podUID", uid)
			return nil, err
		}
		out = append(out, ps)
	}
	m.gcCache(seen)
	return out, nil
}

func (m *Manager) gcCache(seen map[string]bool) {
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	for id := range m.ctrCache {
		if !seen[id] {
			delete(m.ctrCache, id)
		}
	}
	for id := range m.sandboxCache {
		if !seen[id] {
			delete(m.sandboxCache, id)
		}
	}
}

// GetPods implements container.Runtime.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*container.RunningPod, error) {
	statuses, err := m.Relist(ctx)
	if err != nil {
		return nil, err
	}
	var out []*container.RunningPod
	for _, ps := range statuses {
		rp := &container.RunningPod{UID: ps.UID, Name: ps.Name, Namespace: ps.Namespace}
		for _, sb := range ps.Sandboxes {
			if all || sb.State == container.SandboxReady {
				rp.Sandboxes = append(rp.Sandboxes, sb)
			}
		}
		for _, c := range ps.Containers {
			if all || c.State == container.StateRunning {
				rp.Containers = append(rp.Containers, c)
			}
		}
		if !all && len(rp.Sandboxes) == 0 && len(rp.Containers) == 0 {
			continue
		}
		out = append(out, rp)
	}
	return out, nil
}
