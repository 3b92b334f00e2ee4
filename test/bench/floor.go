package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
)

// floorPhases is one floor pod's three CRI calls, each from its issue to its
// return.
type floorPhases struct{ sandbox, create, start time.Duration }

// runFloor starts n pods straight through CRI (RunPodSandbox, CreateContainer,
// StartContainer) with the runtime handler given ("" is the runtime's
// default), one goroutine per pod through gate — the same parallelism as
// our kubelet, which runs one worker per pod and gates its starts the same
// way (a nil gate: every pod at once). It returns each
// pod's latency (first CRI call issued to StartContainer returned), its calls,
// and the time for the whole batch. With every > 0 the pods are started one
// per interval instead (the steady stream).
func runFloor(ctx context.Context, rt cri.RuntimeService, gate *startgate.Gate, n int, tag, handler, logRoot string, every time.Duration) ([]time.Duration, []floorPhases, time.Duration, error) {
	lat := make([]time.Duration, n)
	phases := make([]floorPhases, n)
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
			// The pod's place in the gate's order: its index, as the
			// kubelet's is its creation.
			key := startgate.Key{Created: start.Add(time.Duration(i))}
			phases[i], errs[i] = floorPod(ctx, rt, gate, key, fmt.Sprintf("%s-%d", tag, i), handler, logRoot)
			lat[i] = time.Since(t0)
		}(i)
	}
	wg.Wait()
	batch := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, nil, 0, err
		}
	}
	return lat, phases, batch, nil
}

func floorPod(ctx context.Context, rt cri.RuntimeService, gate *startgate.Gate, key startgate.Key, name, handler, logRoot string) (floorPhases, error) {
	var ph floorPhases
	uid := fmt.Sprintf("floor-%s-%d", name, time.Now().UnixNano())
	logDir := filepath.Join(logRoot, uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return ph, err
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
	release, err := gate.Acquire(ctx, key)
	if err != nil {
		return ph, err
	}
	t := time.Now()
	sb, err := rt.RunPodSandbox(ctx, sbCfg, handler)
	ph.sandbox = time.Since(t)
	release()
	if err != nil {
		return ph, fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	cCfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: testImage},
		Command:  []string{"sleep", "3600"},
		LogPath:  "c/0.log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}
	if release, err = gate.Acquire(ctx, key); err != nil {
		return ph, err
	}
	defer release()
	t = time.Now()
	id, err := rt.CreateContainer(ctx, sb, cCfg, sbCfg)
	ph.create = time.Since(t)
	if err != nil {
		return ph, fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	t = time.Now()
	err = rt.StartContainer(ctx, id)
	ph.start = time.Since(t)
	release()
	if err != nil {
		return ph, fmt.Errorf("StartContainer %s: %w", name, err)
	}
	return ph, nil
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

// crunProbe is what one pod sandbox with the crun handler gave: whether crun
// runs pods here, and a sentence for the report.
type crunProbe struct {
	runs bool
	note string
}

// probeCrun starts one floor pod with the handler that runs crun, once before
// the rounds, so that a crun this runtime cannot use is named in the report
// instead of failing every round.
func probeCrun(ctx context.Context, rt cri.RuntimeService, handler, logRoot string) crunProbe {
	version := "crun"
	if out, err := exec.Command("crun", "--version").Output(); err == nil {
		version = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	defer os.RemoveAll(logRoot)
	_, err := floorPod(ctx, rt, nil, startgate.Key{}, "crun-probe", handler, logRoot)
	if cerr := clearRuntime(ctx, rt); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return crunProbe{note: fmt.Sprintf("%s, as the runtime handler %q, could not start a pod here, so it has no column: %v", version, handler, err)}
	}
	return crunProbe{runs: true, note: fmt.Sprintf("%s as the runtime handler %q: the floor run a second time with it, each round.", version, handler)}
}
