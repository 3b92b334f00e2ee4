package gc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// CRI labels naming a container's pod and name (upstream's).
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// ContainerPolicy is upstream's dead container policy. Its defaults
// (MaxPerPodContainer 1, MaxContainers -1, MinAge 0) are the upstream
// kubelet's.
type ContainerPolicy struct {
	// MinAge: younger dead containers stay.
	MinAge time.Duration
	// MaxPerPodContainer dead instances are kept per pod and container
	// name (< 0: no limit).
	MaxPerPodContainer int
	// MaxContainers dead containers are kept in total (< 0: no limit).
	MaxContainers int
}

// DefaultContainerPolicy is the upstream kubelet's.
var DefaultContainerPolicy = ContainerPolicy{MaxPerPodContainer: 1, MaxContainers: -1}

// Container is one container as the policy sees it.
type Container struct {
	ID      string
	PodUID  types.UID
	Name    string
	Running bool
	// Created: created and not started yet (CONTAINER_CREATED). The newest
	// instance of a container in that state is one a pod worker is about
	// to start, not a dead one.
	Created   bool
	CreatedAt time.Time
	SandboxID string
}

// Sandbox is one sandbox as the policy sees it.
type Sandbox struct {
	ID        string
	PodUID    types.UID
	Ready     bool
	CreatedAt time.Time
}

// PodState tells the collectors about a pod: gone means nothing of it may
// stay (it left every source and has no worker); terminated means none of
// its containers will run again.
type PodState func(uid types.UID) (gone, terminated bool)

// SelectContainers returns the dead containers to remove, oldest last
// within each group, as upstream's policy: see the package doc.
// allTerminated removes every dead container of terminated pods too.
//
// A container created and not yet started that is its container's newest
// instance is not dead: its pod worker is between CreateContainer and
// StartContainer. It neither counts toward MaxPerPodContainer nor goes,
// unless its pod does; otherwise the collection would keep it as the
// "newest dead instance" and remove the one that just exited, the one
// `kubectl logs --previous` and the restart's lastState read.
func SelectContainers(cs []Container, p ContainerPolicy, now time.Time, state PodState, allTerminated bool) []Container {
	type key struct {
		uid  types.UID
		name string
	}
	newest := map[key]Container{}
	for _, c := range cs {
		k := key{c.PodUID, c.Name}
		if n, ok := newest[k]; !ok || c.CreatedAt.After(n.CreatedAt) {
			newest[k] = c
		}
	}
	groups := map[key][]Container{}
	var keys []key
	for _, c := range cs {
		if c.Running || now.Sub(c.CreatedAt) < p.MinAge {
			continue
		}
		k := key{c.PodUID, c.Name}
		if c.Created && newest[k].ID == c.ID {
			if gone, terminated := state(c.PodUID); !gone && !(allTerminated && terminated) {
				continue // about to start
			}
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].uid != keys[j].uid {
			return keys[i].uid < keys[j].uid
		}
		return keys[i].name < keys[j].name
	})
	var out []Container
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].CreatedAt.After(g[j].CreatedAt) })
		gone, terminated := state(k.uid)
		if gone || (allTerminated && terminated) {
			out = append(out, g...)
			delete(groups, k)
			continue
		}
		if p.MaxPerPodContainer >= 0 && len(g) > p.MaxPerPodContainer {
			out = append(out, g[p.MaxPerPodContainer:]...)
			groups[k] = g[:p.MaxPerPodContainer]
		}
	}
	if p.MaxContainers < 0 {
		return out
	}
	total := 0
	for _, g := range groups {
		total += len(g)
	}
	if total <= p.MaxContainers {
		return out
	}
	// Over the total: first at most MaxContainers/groups per group (at
	// least one), then the oldest of what is left.
	perGroup := p.MaxContainers / max(len(groups), 1)
	if perGroup < 1 {
		perGroup = 1
	}
	var rest []Container
	for _, k := range keys {
		g, ok := groups[k]
		if !ok {
			continue
		}
		if len(g) > perGroup {
			out = append(out, g[perGroup:]...)
			g = g[:perGroup]
		}
		rest = append(rest, g...)
	}
	if len(rest) > p.MaxContainers {
		sort.SliceStable(rest, func(i, j int) bool { return rest[i].CreatedAt.After(rest[j].CreatedAt) })
		out = append(out, rest[p.MaxContainers:]...)
	}
	return out
}

// SelectSandboxes returns the sandboxes to remove: not ready, no
// container left in them (after removing the dead containers selected),
// and not the newest of a pod that is still there.
func SelectSandboxes(sbs []Sandbox, remaining []Container, state PodState) []Sandbox {
	used := map[string]bool{}
	for _, c := range remaining {
		used[c.SandboxID] = true
	}
	newest := map[types.UID]Sandbox{}
	for _, s := range sbs {
		if n, ok := newest[s.PodUID]; !ok || s.CreatedAt.After(n.CreatedAt) {
			newest[s.PodUID] = s
		}
	}
	var out []Sandbox
	for _, s := range sbs {
		if s.Ready || used[s.ID] {
			continue
		}
		gone, _ := state(s.PodUID)
		if !gone && newest[s.PodUID].ID == s.ID {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ContainerGC collects dead containers, sandboxes and pod log directories
// through the CRI.
type ContainerGC struct {
	Runtime cri.RuntimeService
	Policy  ContainerPolicy
	State   PodState
	// PodLogsDir holds pods' log directories (<ns>_<name>_<uid>).
	PodLogsDir string
	// LogSymlinkDir holds the links to containers' logs
	// (<pod>_<ns>_<container>-<id>.log); the links of containers this
	// collection removes go with them, and so does any link whose
	// container the runtime no longer has and whose log is gone.
	LogSymlinkDir string
	// Ready reports that every pod source has been heard from: until then
	// an unknown pod may simply not be known yet, so nothing is taken for
	// gone.
	Ready func() bool
	Clock clock.Clock
}

// Period is how often dead containers are collected (upstream's).
const Period = time.Minute

// Start collects every Period until ctx ends.
func (g *ContainerGC) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("container-gc")
	ctx = klog.NewContext(ctx, log)
	clk := g.clock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(Period):
		}
		if err := g.collect(ctx, false); err != nil {
			log.Error(err, "Container garbage collection failed")
		}
	}
}

// DeleteAllUnusedContainers is the eviction manager's reclaimer: the
// regular collection, plus every dead container of terminated pods.
func (g *ContainerGC) DeleteAllUnusedContainers(ctx context.Context) error {
	return g.collect(ctx, true)
}

func (g *ContainerGC) clock() clock.Clock {
	if g.Clock == nil {
		return clock.RealClock{}
	}
	return g.Clock
}

func (g *ContainerGC) collect(ctx context.Context, allTerminated bool) error {
	log := klog.FromContext(ctx)
	ready := g.Ready == nil || g.Ready()
	state := g.State
	if !ready {
		// Until every source reported, no pod is taken for gone.
		state = func(uid types.UID) (bool, bool) { _, t := g.State(uid); return false, t }
	}
	ctrs, err := g.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	sbs, err := g.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing sandboxes: %w", err)
	}
	var cs []Container
	for _, c := range ctrs {
		uid := types.UID(c.GetLabels()[labelPodUID])
		if uid == "" {
			continue // not the kubelet's
		}
		name := c.GetLabels()[labelContainerName]
		if name == "" {
			name = c.GetMetadata().GetName()
		}
		cs = append(cs, Container{ID: c.Id, PodUID: uid, Name: name, SandboxID: c.PodSandboxId,
			Running: c.State == runtimeapi.ContainerState_CONTAINER_RUNNING, Created: c.State == runtimeapi.ContainerState_CONTAINER_CREATED,
			CreatedAt: time.Unix(0, c.CreatedAt)})
	}
	remove := SelectContainers(cs, g.Policy, g.clock().Now(), state, allTerminated)
	var errs []error
	removed := map[string]bool{}
	for _, c := range remove {
		if err := g.Runtime.RemoveContainer(ctx, c.ID); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("removing container %s: %w", c.ID, err))
			continue
		}
		removed[c.ID] = true
	}
	var left []Container
	for _, c := range cs {
		if !removed[c.ID] {
			left = append(left, c)
		}
	}
	var sandboxes []Sandbox
	for _, s := range sbs {
		uid := types.UID(s.GetLabels()[labelPodUID])
		if uid == "" {
			uid = types.UID(s.GetMetadata().GetUid())
		}
		if uid == "" {
			continue
		}
		sandboxes = append(sandboxes, Sandbox{ID: s.Id, PodUID: uid, Ready: s.State == runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.CreatedAt)})
	}
	rmSandboxes := SelectSandboxes(sandboxes, left, state)
	gone := map[string]bool{}
	for _, s := range rmSandboxes {
		if err := g.Runtime.RemovePodSandbox(ctx, s.ID); err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", s.ID, err))
			continue
		}
		gone[s.ID] = true
	}
	links := g.removeLogSymlinks(ctx, ctrs, removed)
	logs := 0
	if ready && g.PodLogsDir != "" {
		alive := map[types.UID]bool{}
		for _, s := range sandboxes {
			if !gone[s.ID] {
				alive[s.PodUID] = true
			}
		}
		logs = g.removePodLogDirs(ctx, alive, state)
	}
	if len(remove) > 0 || len(rmSandboxes) > 0 || logs > 0 || links > 0 {
		log.V(2).Info("Garbage collected", "containers", len(removed), "sandboxes", len(rmSandboxes), "podLogDirs", logs, "logSymlinks", links)
	}
	return errors.Join(errs...)
}

// removeLogSymlinks removes the links of the containers just removed, and
// links whose container is not among those listed (ctrs) and whose log is
// gone: left by containers removed elsewhere. A link of a listed container
// stays even when its log is missing for a moment (rotation), and so does a
// link of a container started after the listing: it was made only once its
// log existed.
func (g *ContainerGC) removeLogSymlinks(ctx context.Context, ctrs []*runtimeapi.Container, removed map[string]bool) int {
	if g.LogSymlinkDir == "" {
		return 0
	}
	entries, err := os.ReadDir(g.LogSymlinkDir)
	if err != nil {
		return 0
	}
	listed := make(map[string]bool, len(ctrs))
	for _, c := range ctrs {
		listed[c.Id] = !removed[c.Id]
	}
	n := 0
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		id, ok := logSymlinkContainerID(e.Name())
		if !ok || listed[id] {
			continue
		}
		path := filepath.Join(g.LogSymlinkDir, e.Name())
		if !removed[id] {
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				continue
			}
		}
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			klog.FromContext(ctx).V(2).Info("Removing a container log link failed", "link", e.Name(), "err", err)
			continue
		}
		n++
	}
	return n
}

// logSymlinkContainerID is the container ID a log link's name ends with
// (<pod>_<ns>_<container>-<id>.log). A name cut to 255 bytes yields a piece
// of the container's name instead, which is never listed: its link goes
// only once its log is gone.
func logSymlinkContainerID(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".log")
	i := strings.LastIndexByte(base, '-')
	if !ok || i < 0 || i == len(base)-1 {
		return "", false
	}
	return base[i+1:], true
}

// removePodLogDirs removes the log directories of pods that are gone and
// have no sandbox left.
func (g *ContainerGC) removePodLogDirs(ctx context.Context, alive map[types.UID]bool, state PodState) int {
	entries, err := os.ReadDir(g.PodLogsDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		parts := strings.Split(e.Name(), "_")
		if !e.IsDir() || len(parts) != 3 {
			continue
		}
		uid := types.UID(parts[2])
		if alive[uid] {
			continue
		}
		if gone, _ := state(uid); !gone {
			continue
		}
		if err := os.RemoveAll(filepath.Join(g.PodLogsDir, e.Name())); err != nil {
			klog.FromContext(ctx).V(2).Info("Removing a pod log directory failed", "dir", e.Name(), "err", err)
			continue
		}
		n++
	}
	return n
}

// notFound: the object went meanwhile (the pod's own removal got there
// first).
func notFound(err error) bool { return status.Code(err) == codes.NotFound }
