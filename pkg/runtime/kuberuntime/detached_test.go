package kuberuntime

import (
	"context"
	"testing"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ctxRecorder records whether each call's context was already cancelled.
type ctxRecorder struct {
	cri.RuntimeService
	cancelled map[string]bool
}

func (r *ctxRecorder) note(name string, ctx context.Context) { r.cancelled[name] = ctx.Err() != nil }

func (r *ctxRecorder) RunPodSandbox(ctx context.Context, _ *runtimeapi.PodSandboxConfig, _ string) (string, error) {
	r.note("RunPodSandbox", ctx)
	return "", nil
}
func (r *ctxRecorder) StopPodSandbox(ctx context.Context, _ string) error {
	r.note("StopPodSandbox", ctx)
	return nil
}
func (r *ctxRecorder) RemovePodSandbox(ctx context.Context, _ string) error {
	r.note("RemovePodSandbox", ctx)
	return nil
}
func (r *ctxRecorder) CreateContainer(ctx context.Context, _ string, _ *runtimeapi.ContainerConfig, _ *runtimeapi.PodSandboxConfig) (string, error) {
	r.note("CreateContainer", ctx)
	return "", nil
}
func (r *ctxRecorder) StartContainer(ctx context.Context, _ string) error {
	r.note("StartContainer", ctx)
	return nil
}
func (r *ctxRecorder) StopContainer(ctx context.Context, _ string, _ int64) error {
	r.note("StopContainer", ctx)
	return nil
}
func (r *ctxRecorder) RemoveContainer(ctx context.Context, _ string) error {
	r.note("RemoveContainer", ctx)
	return nil
}
func (r *ctxRecorder) ListContainers(ctx context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.note("ListContainers", ctx)
	return nil, nil
}

// Regression: a StartContainer cancelled mid-flight left containerd 1.6 with
// a container "in starting state" that could never be removed.
func TestMutatingCallsIgnoreCancellation(t *testing.T) {
	rec := &ctxRecorder{cancelled: map[string]bool{}}
	d := detached{rec}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = d.RunPodSandbox(ctx, nil, "")
	_ = d.StopPodSandbox(ctx, "")
	_ = d.RemovePodSandbox(ctx, "")
	_, _ = d.CreateContainer(ctx, "", nil, nil)
	_ = d.StartContainer(ctx, "")
	_ = d.StopContainer(ctx, "", 0)
	_ = d.RemoveContainer(ctx, "")
	_, _ = d.ListContainers(ctx, nil)
	for _, name := range []string{"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer"} {
		if got, ok := rec.cancelled[name]; !ok || got {
			t.Errorf("%s: called=%v, saw a cancelled context=%v", name, ok, got)
		}
	}
	if !rec.cancelled["ListContainers"] {
		t.Errorf("reads should stay cancellable")
	}
}
