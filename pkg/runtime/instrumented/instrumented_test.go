package instrumented

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

var registry = metrics.NewKubeletRegistry(metrics.KubeletOptions{})

func scrape(t *testing.T) metricstest.Families {
	t.Helper()
	f, err := metricstest.ScrapeHandler(compbase.HandlerFor(registry, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type event struct {
	kind, uid, what string
	err             bool
}

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}
func (r *recorder) SandboxStarted(uid types.UID, _, _ time.Time, err error) {
	r.add(event{"sandbox", string(uid), "", err != nil})
}
func (r *recorder) ImagePulled(uid types.UID, image string, _, _ time.Time, err error) {
	r.add(event{"pull", string(uid), image, err != nil})
}
func (r *recorder) ContainerCreated(uid types.UID, name string, _, _ time.Time, err error) {
	r.add(event{"create", string(uid), name, err != nil})
}
func (r *recorder) ContainerStarted(uid types.UID, name string, _, _ time.Time, err error) {
	r.add(event{"start", string(uid), name, err != nil})
}

func TestRuntimeService(t *testing.T) {
	fake := critest.NewFakeRuntimeService()
	obs := &recorder{}
	rs := RuntimeService(fake, obs)
	ctx := context.Background()
	before := scrape(t)

	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "uid-1"}}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "example.com/a:1"}}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	fake.InjectError("ListContainers", errors.New("boom"))
	if _, err := rs.ListContainers(ctx, nil); err == nil {
		t.Fatal("the injected error was lost")
	}
	if _, err := rs.Version(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	after := scrape(t)
	for _, tc := range []struct {
		name, op string
		delta    float64
	}{
		{"kubelet_runtime_operations_total", "run_podsandbox", 1},
		{"kubelet_runtime_operations_total", "create_container", 1},
		{"kubelet_runtime_operations_total", "start_container", 1},
		{"kubelet_runtime_operations_total", "list_containers", 1},
		{"kubelet_runtime_operations_total", "version", 1},
		{"kubelet_runtime_operations_errors_total", "list_containers", 1},
		{"kubelet_runtime_operations_errors_total", "version", 0},
		{"kubelet_runtime_operations_duration_seconds", "start_container", 1},
	} {
		sel := map[string]string{"operation_type": tc.op}
		if d := after.Sum(tc.name, sel) - before.Sum(tc.name, sel); d != tc.delta {
			t.Errorf("%s{%s} grew by %v, want %v", tc.name, tc.op, d, tc.delta)
		}
	}
	if d := after.Sum("kubelet_run_podsandbox_duration_seconds", map[string]string{"runtime_handler": ""}) - before.Sum("kubelet_run_podsandbox_duration_seconds", map[string]string{"runtime_handler": ""}); d != 1 {
		t.Errorf("run_podsandbox_duration grew by %v", d)
	}
	want := []event{{"sandbox", "uid-1", "", false}, {"create", "uid-1", "app", false}, {"start", "uid-1", "app", false}}
	if len(obs.events) != len(want) {
		t.Fatalf("events = %+v", obs.events)
	}
	for i := range want {
		if obs.events[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, obs.events[i], want[i])
		}
	}
	// A container the observer never saw created (e.g. made before a
	// restart) is started without an event.
	obs.events = nil
	fake.SetFakeContainers([]*critest.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{Id: "old", Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}}})
	_ = rs.StartContainer(ctx, "old")
	if len(obs.events) != 0 {
		t.Errorf("events for an unknown container: %+v", obs.events)
	}
	// Without an observer nothing is reported and nothing breaks.
	if _, err := RuntimeService(fake, nil).RunPodSandbox(ctx, sbCfg, ""); err != nil {
		t.Fatal(err)
	}
}

func TestImageService(t *testing.T) {
	fake := critest.NewFakeImageService()
	obs := &recorder{}
	is := ImageService(fake, obs)
	ctx := context.Background()
	before := scrape(t)
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-2"}}
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "example.com/a:1"}, nil, sbCfg); err != nil {
		t.Fatal(err)
	}
	fake.InjectError("PullImage", errors.New("denied"))
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "example.com/b:1"}, nil, sbCfg); err == nil {
		t.Fatal("the injected error was lost")
	}
	want := []event{{"pull", "uid-2", "example.com/a:1", false}, {"pull", "uid-2", "example.com/b:1", true}}
	if len(obs.events) != 2 || obs.events[0] != want[0] || obs.events[1] != want[1] {
		t.Errorf("events = %+v", obs.events)
	}
	// The successful pull is timed by image size, in the background.
	var f metricstest.Families
	eventually.Seen(t, "kubelet_image_pull_duration_seconds observed", func() (bool, string) {
		f = scrape(t)
		return f.Sum("kubelet_image_pull_duration_seconds", nil)-before.Sum("kubelet_image_pull_duration_seconds", nil) == 1,
			fmt.Sprint(f.Find("kubelet_image_pull_duration_seconds", nil))
	})
	if d := f.Sum("kubelet_runtime_operations_errors_total", map[string]string{"operation_type": "pull_image"}) - before.Sum("kubelet_runtime_operations_errors_total", map[string]string{"operation_type": "pull_image"}); d != 1 {
		t.Errorf("pull errors grew by %v", d)
	}
}
