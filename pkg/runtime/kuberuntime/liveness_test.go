package kuberuntime

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// stopRecorder remembers the timeout of each StopContainer call.
type stopRecorder struct {
	*critest.FakeRuntimeService
	mu       sync.Mutex
	timeouts map[string]int64
}

func (s *stopRecorder) StopContainer(ctx context.Context, id string, timeout int64) error {
	s.mu.Lock()
	s.timeouts[id] = timeout
	s.mu.Unlock()
	return s.FakeRuntimeService.StopContainer(ctx, id, timeout)
}

// The executor kills a container whose liveness probe failed with the
// probe's grace period and the upstream Killing message, and starts the next
// instance in the same round.
func TestSyncPodRestartsOnLivenessFailure(t *testing.T) {
	e := newEnv(t)
	rs := &stopRecorder{FakeRuntimeService: e.rs, timeouts: map[string]int64{}}
	var failedID string
	m, err := NewWithServices(context.Background(), rs, e.is, Options{
		RootDir: filepath.Join(e.dir, "root"), PodLogsDir: filepath.Join(e.dir, "logs"),
		Recorder: e.rec, Clock: e.clk, MachineMemoryCapacity: 8 << 30, Mounts: fakeMounts,
		Liveness: func(uid types.UID, name, id string) (bool, string) {
			if id == failedID {
				return true, "Container " + name + " failed liveness probe"
			}
			return false, ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	pod := testPod()
	probeGrace := int64(3)
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &probeGrace,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz"}}}

	if r, _ := e.sync(t, pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	_, st := e.sync(t, pod)
	first := st.Latest("app")
	if first == nil || first.State != container.StateRunning {
		t.Fatalf("not running: %+v", first)
	}
	failedID = first.ID
	for len(e.rec.Events) > 0 {
		<-e.rec.Events
	}

	r, _ := e.sync(t, pod)
	if got := steps(r); got != "KillContainer:app StartContainer:app" {
		t.Fatalf("after liveness failure: %s (%v)", got, r.Error())
	}
	if got := rs.timeouts[first.ID]; got != probeGrace {
		t.Errorf("stopped with grace %d, want the probe's %d", got, probeGrace)
	}
	var killing string
	for len(e.rec.Events) > 0 {
		if ev := <-e.rec.Events; strings.Contains(ev, "Killing") {
			killing = ev
		}
	}
	if want := "Normal Killing Container app failed liveness probe, will be restarted"; killing != want {
		t.Errorf("event %q, want %q", killing, want)
	}
	st, _ = e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if l := st.Latest("app"); l.ID == first.ID || l.State != container.StateRunning || l.RestartCount != 1 {
		t.Fatalf("new instance %+v", l)
	}
	// The new instance has fresh results: nothing more happens.
	if r, _ := e.sync(t, pod); len(r.Steps) != 0 {
		t.Fatalf("steady state after restart did %s", steps(r))
	}
}
