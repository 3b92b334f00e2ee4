// Package logrotate keeps container logs within containerLogMaxSize and
// containerLogMaxFiles, as upstream's container log manager: every
// containerLogMonitorInterval it looks at each running container's log
// file (the runtime writes it, in the CRI log format); one at or over the
// size limit is renamed to <log>.<timestamp> and the runtime is asked to
// reopen its log (CRI ReopenContainerLog), so no line is lost or split by
// the kubelet. Before that, rotated files beyond MaxFiles-2 are removed
// (oldest first: the live file and the newest rotated one make up the
// rest) and every rotated file but the newest is gzip-compressed
// (<log>.<timestamp>.gz), which the kubelet API's log reader follows.
// Leftovers of an interrupted compression (.tmp, or a plain file beside
// its .gz) are removed first.
package logrotate

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Upstream's file name parts.
const (
	timestampFormat = "20060102-150405"
	compressSuffix  = ".gz"
	tmpSuffix       = ".tmp"
)

// Policy is the rotation configuration.
type Policy struct {
	// MaxSize in bytes a live log may reach before it is rotated.
	MaxSize int64
	// MaxFiles is how many files (live and rotated) a container keeps.
	MaxFiles int
}

// Manager rotates the logs of running containers.
type Manager struct {
	Runtime  cri.RuntimeService
	Policy   Policy
	Interval time.Duration
	// Workers rotate that many containers at a time.
	Workers int
	Clock   clock.Clock

	mu    sync.Mutex
	paths map[string]string // container ID -> log path
}

func (m *Manager) clock() clock.Clock {
	if m.Clock == nil {
		return clock.RealClock{}
	}
	return m.Clock
}

// Start rotates every Interval until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("logrotate")
	ctx = klog.NewContext(ctx, log)
	interval := m.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.clock().After(interval):
		}
		if err := m.RotateAll(ctx); err != nil {
			log.Error(err, "Container log rotation failed")
		}
	}
}

// RotateAll rotates the log of every running container that needs it.
func (m *Manager) RotateAll(ctx context.Context) error {
	ctrs, err := m.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	m.mu.Lock()
	if m.paths == nil {
		m.paths = map[string]string{}
	}
	live := map[string]bool{}
	for _, c := range ctrs {
		live[c.Id] = true
	}
	for id := range m.paths {
		if !live[id] {
			delete(m.paths, id)
		}
	}
	m.mu.Unlock()
	workers := m.Workers
	if workers < 1 {
		workers = 1
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := m.process(ctx, id); err != nil {
					klog.FromContext(ctx).Error(err, "Failed to rotate log for container", "containerID", id)
				}
			}
		}()
	}
	for _, c := range ctrs {
		ids <- c.Id
	}
	close(ids)
	wg.Wait()
	return nil
}

func (m *Manager) logPath(ctx context.Context, id string) (string, error) {
	m.mu.Lock()
	p, ok := m.paths[id]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	resp, err := m.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("container status: %w", err)
	}
	p = resp.GetStatus().GetLogPath()
	m.mu.Lock()
	m.paths[id] = p
	m.mu.Unlock()
	return p, nil
}

// process rotates one container's log when it is at or over MaxSize; a
// missing log is reopened.
func (m *Manager) process(ctx context.Context, id string) error {
	path, err := m.logPath(ctx, id)
	if err != nil || path == "" {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		if !os.IsNotExist(err) {
			return err
		}
		if err := m.Runtime.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("the container log is missing and reopening it failed: %w", err)
		}
		if info, err = os.Stat(path); err != nil {
			return err
		}
	}
	if info.Size() < m.Policy.MaxSize {
		return nil
	}
	return m.rotate(ctx, id, path)
}

func (m *Manager) rotate(ctx context.Context, id, path string) error {
	logs, err := filepath.Glob(path + ".*")
	if err != nil {
		return err
	}
	if logs, err = cleanupUnused(logs); err != nil {
		return err
	}
	if logs, err = removeExcess(logs, m.Policy.MaxFiles); err != nil {
		return err
	}
	for _, l := range logs {
		if strings.HasSuffix(l, compressSuffix) {
			continue
		}
		if err := compress(l); err != nil {
			return fmt.Errorf("compressing %s: %w", l, err)
		}
	}
	rotated := path + "." + m.clock().Now().Format(timestampFormat)
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	if err := m.Runtime.ReopenContainerLog(ctx, id); err != nil {
		// Put it back so the runtime's open file and its name agree.
		if rerr := os.Rename(rotated, path); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Failed to rename the rotated log back", "log", path)
		}
		return fmt.Errorf("reopening the container log: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Rotated container log", "containerID", id, "log", path)
	return nil
}

// cleanupUnused removes temporary files and plain files whose compressed
// twin exists (a compression interrupted after its rename).
func cleanupUnused(logs []string) ([]string, error) {
	have := map[string]bool{}
	for _, l := range logs {
		have[l] = true
	}
	var out []string
	for _, l := range logs {
		if strings.HasSuffix(l, tmpSuffix) || (!strings.HasSuffix(l, compressSuffix) && have[l+compressSuffix]) {
			if err := os.Remove(l); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// removeExcess keeps the newest maxFiles-2 rotated files (names sort by
// timestamp) and removes the rest.
func removeExcess(logs []string, maxFiles int) ([]string, error) {
	sort.Strings(logs)
	keep := maxFiles - 2
	if keep < 0 {
		keep = 0
	}
	n := len(logs) - keep
	for i := 0; i < n; i++ {
		if err := os.Remove(logs[i]); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	if n > 0 {
		logs = logs[n:]
	}
	return logs, nil
}

// compress gzips log into log.gz through a temporary file, then removes
// log.
func compress(log string) (err error) {
	info, err := os.Stat(log)
	if err != nil {
		return err
	}
	in, err := os.Open(log)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := log + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode())
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	w := gzip.NewWriter(out)
	if _, err = io.Copy(w, in); err != nil {
		out.Close()
		return err
	}
	if err = errors.Join(w.Close(), out.Close()); err != nil {
		return err
	}
	if err = os.Rename(tmp, log+compressSuffix); err != nil {
		return err
	}
	return os.Remove(log)
}
