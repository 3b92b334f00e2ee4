package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runFloor starts n pods straight through CRI (RunPodSandbox, CreateContainer,
// StartContainer), all at once with one goroutine per pod — the same
// parallelism as our kubelet, which runs one worker per pod with no limit.
// It returns each pod's latency (first CRI call issued to StartContainer
// returned) and the time for the whole batch. With every > 0 the pods are
// started one per interval instead (the steady stream).
func runFloor(ctx context.Context, rt cri.RuntimeService, n int, tag, logRoot string, every time.Duration) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		if every > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			errs[i] = floorPod(ctx, rt, fmt.Sprintf("%s-%d", tag, i), logRoot)
			lat[i] = time.Since(t0)
		}(i)
	}
	wg.Wait()
	batch := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return lat, batch, nil
}

func floorPod(ctx context.Context, rt cri.RuntimeService, name, logRoot string) error {
	uid := fmt.Sprintf("floor-%s-%d", name, time.Now().UnixNano())
	logDir := filepath.Join(logRoot, uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench-floor", Uid: uid},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       map[string]string{"bench": "floor"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		return fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	cCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: testImage},
		Command:  []string{"sleep", "3600"},
		LogPath:  "c/0.log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
	id, err := rt.CreateContainer(ctx, sb, cCfg, sbCfg)
	if err != nil {
		return fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		return fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return nil
}

// clearRuntime stops and removes every pod sandbox (and so every container),
// ten at a time.
func clearRuntime(ctx context.Context, rt cri.RuntimeService) error {
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 10)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, sb := range sbs {
		wg.Add(1)
		sem <- struct{}{}
		go func(id string) {
			defer wg.Done()
			defer func() { <-sem }()
			err := rt.StopPodSandbox(ctx, id)
			if err == nil {
				err = rt.RemovePodSandbox(ctx, id)
			}
			// Gone meanwhile (a kubelet still finishing a removal): fine.
			if err != nil && status.Code(err) != codes.NotFound {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("clearing sandbox %s: %w", id, err)
				}
				mu.Unlock()
			}
		}(sb.Id)
	}
	wg.Wait()
	return first
}
