package podstatus

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func inst(name, id string, state container.State, code int32, attempt int, created time.Time) container.Status {
	return container.Status{
		ID: id, Name: name, State: state, ExitCode: code, RestartCount: attempt,
		CreatedAt: created, StartedAt: created.Add(time.Second), FinishedAt: created.Add(time.Minute),
		Image: "img-" + name, ImageRef: "sha256:" + name,
	}
}

func observedOf(cs ...container.Status) *container.PodStatus {
	return &container.PodStatus{UID: "u1", Containers: cs}
}

// containerCase is one case of TestContainerStatuses.
type containerCase struct {
	name     string
	pod      *v1.Pod
	init     bool
	observed *container.PodStatus
	waiting  map[string]container.WaitingReason
	prev     []v1.ContainerStatus
	check    func(t *testing.T, st v1.ContainerStatus)
}

func TestContainerStatuses(t *testing.T) {
	never := podOf(v1.RestartPolicyNever, nil, nil, "a")
	always := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	withInit := podOf(v1.RestartPolicyAlways, []string{"i"}, nil, "a")
	deleting := podOf(v1.RestartPolicyAlways, nil, nil, "a")
	now := metav1.NewTime(t0)
	deleting.DeletionTimestamp = &now
	terminatedPrev := exited("a", 3)
	terminatedPrev.ContainerID = "containerd://gone"

	tests := []containerCase{
		{
			name: "never created: ContainerCreating",
			pod:  always,
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonContainerCreating)
				if st.Image != "img-a" {
					t.Errorf("image %q", st.Image)
				}
			},
		},
		{
			name: "pod with init containers: PodInitializing",
			pod:  withInit,
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonPodInitializing)
			},
		},
		{
			name:     "running",
			pod:      always,
			observed: observedOf(inst("a", "c1", container.StateRunning, 0, 0, t0)),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Running == nil || !st.State.Running.StartedAt.Time.Equal(t0.Add(time.Second)) {
					t.Fatalf("state %+v", st.State)
				}
				if st.ContainerID != "containerd://c1" || st.ImageID != "sha256:a" || st.Image != "img-a" {
					t.Errorf("ids %q %q %q", st.ContainerID, st.ImageID, st.Image)
				}
			},
		},
		{
			name: "exited with last state and restart count",
			pod:  never,
			observed: observedOf(
				inst("a", "c2", container.StateExited, 1, 1, t0.Add(time.Hour)),
				inst("a", "c1", container.StateExited, 0, 0, t0),
			),
			check: func(t *testing.T, st v1.ContainerStatus) {
				term := st.State.Terminated
				if term == nil || term.ExitCode != 1 || term.Reason != ReasonError || term.ContainerID != "containerd://c2" {
					t.Fatalf("state %+v", st.State)
				}
				if !term.FinishedAt.Time.Equal(t0.Add(time.Hour + time.Minute)) {
					t.Errorf("finishedAt %v", term.FinishedAt)
				}
				last := st.LastTerminationState.Terminated
				if last == nil || last.ExitCode != 0 || last.Reason != ReasonCompleted {
					t.Errorf("last %+v", st.LastTerminationState)
				}
				if st.RestartCount != 1 {
					t.Errorf("restarts %d", st.RestartCount)
				}
			},
		},
		{
			name: "runtime reason kept",
			pod:  never,
			observed: observedOf(func() container.Status {
				s := inst("a", "c1", container.StateExited, 137, 0, t0)
				s.Reason, s.Message = "OOMKilled", "oom"
				return s
			}()),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated.Reason != "OOMKilled" || st.State.Terminated.Message != "oom" {
					t.Errorf("state %+v", st.State.Terminated)
				}
			},
		},
		{
			name:     "created: waiting without reason",
			pod:      always,
			observed: observedOf(inst("a", "c1", container.StateCreated, 0, 0, t0)),
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, "")
			},
		},
		{
			name:     "crashloop reason from last sync",
			pod:      always,
			observed: observedOf(inst("a", "c1", container.StateExited, 2, 3, t0)),
			waiting:  map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, "CrashLoopBackOff")
				if st.State.Waiting.Message != "back-off 40s" {
					t.Errorf("message %q", st.State.Waiting.Message)
				}
				if st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 2 {
					t.Errorf("last %+v", st.LastTerminationState)
				}
				if st.RestartCount != 3 {
					t.Errorf("restarts %d", st.RestartCount)
				}
			},
		},
		{
			name:    "image pull error before first start",
			pod:     always,
			waiting: map[string]container.WaitingReason{"a": {Reason: "ErrImagePull", Message: "not found"}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, "ErrImagePull")
			},
		},
		{
			name:     "cleared reason is ignored",
			pod:      always,
			observed: observedOf(inst("a", "c1", container.StateExited, 2, 0, t0)),
			waiting:  map[string]container.WaitingReason{"a": {}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil {
					t.Errorf("state %+v", st.State)
				}
			},
		},
		{
			name:     "Never: no waiting reason on a finished container",
			pod:      never,
			observed: observedOf(inst("a", "c1", container.StateExited, 2, 0, t0)),
			waiting:  map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil {
					t.Errorf("state %+v", st.State)
				}
			},
		},
		{
			name:     "deleting pod: no waiting reason",
			pod:      deleting,
			observed: observedOf(inst("a", "c1", container.StateExited, 2, 0, t0)),
			waiting:  map[string]container.WaitingReason{"a": {Reason: "CrashLoopBackOff"}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil {
					t.Errorf("state %+v", st.State)
				}
			},
		},
		{
			name: "gone from runtime: terminated status kept",
			pod:  never,
			prev: cs(terminatedPrev),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 || st.ContainerID != "containerd://gone" {
					t.Errorf("state %+v", st)
				}
			},
		},
		{
			name: "gone from runtime while running: stopped with unknown status",
			pod:  always,
			prev: cs(func() v1.ContainerStatus { s := running("a"); s.RestartCount = 4; return s }()),
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonContainerCreating)
				last := st.LastTerminationState.Terminated
				if last == nil || last.Reason != ReasonStatusUnknown || last.ExitCode != 137 {
					t.Fatalf("last %+v", st.LastTerminationState)
				}
				if st.RestartCount != 5 {
					t.Errorf("restarts %d, want 5", st.RestartCount)
				}
			},
		},
		{
			name: "gone while running on a deleted pod: no extra restart",
			pod:  deleting,
			prev: cs(func() v1.ContainerStatus { s := running("a"); s.RestartCount = 4; return s }()),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.RestartCount != 4 || st.LastTerminationState.Terminated == nil {
					t.Errorf("status %+v", st)
				}
			},
		},
		{
			name:     "unknown state after running: terminated",
			pod:      always,
			observed: observedOf(inst("a", "c1", container.StateUnknown, 0, 0, t0)),
			prev:     cs(func() v1.ContainerStatus { s := running("a"); s.RestartCount = 1; return s }()),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil || st.State.Terminated.Reason != ReasonStatusUnknown {
					t.Fatalf("state %+v", st.State)
				}
				if st.RestartCount != 2 {
					t.Errorf("restarts %d", st.RestartCount)
				}
			},
		},
		{
			name:     "older instance removed: last state from previous status",
			pod:      always,
			observed: observedOf(inst("a", "c2", container.StateRunning, 0, 1, t0)),
			prev:     cs(terminatedPrev),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Running == nil || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 3 {
					t.Errorf("status %+v", st)
				}
			},
		},
		{
			name:     "init container exited 0 ignores waiting reason",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("i", "c1", container.StateExited, 0, 0, t0)),
			waiting:  map[string]container.WaitingReason{"i": {Reason: "CrashLoopBackOff"}},
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.Name != "i" || st.State.Terminated == nil {
					t.Errorf("status %+v", st)
				}
			},
		},
	}
	// An init container removed from the runtime (a kubelet restart of a
	// static pod keeps no status of it) after the app container was made.
	withSidecar := podOf(v1.RestartPolicyAlways, nil, []string{"i"}, "a")
	wantInferred := func(t *testing.T, st v1.ContainerStatus) {
		t.Helper()
		term := st.State.Terminated
		if term == nil || term.Reason != ReasonCompleted || term.ExitCode != 0 || term.Message != msgInitLostAfterInit {
			t.Fatalf("state %+v, want terminated Completed, exit 0, with upstream's message", st.State)
		}
	}
	tests = append(tests, []containerCase{
		{
			name:     "init container gone, app container running: exited normally",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateRunning, 0, 0, t0)),
			check:    wantInferred,
		},
		{
			name:     "init container gone, app container only created: exited normally",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateCreated, 0, 0, t0)),
			check:    wantInferred,
		},
		{
			name:     "init container gone, app container running, a waiting reason from the last sync: exited normally",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateRunning, 0, 0, t0)),
			waiting:  map[string]container.WaitingReason{"i": {Reason: "CrashLoopBackOff"}},
			check:    wantInferred,
		},
		{
			name: "init container gone, no app container: still initializing",
			pod:  withInit,
			init: true,
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonPodInitializing)
			},
		},
		{
			name:     "init container gone, app container in unknown state: still initializing",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateUnknown, 0, 0, t0)),
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonPodInitializing)
			},
		},
		{
			name:     "sidecar gone, app container running: waits to be restarted",
			pod:      withSidecar,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateRunning, 0, 0, t0)),
			check: func(t *testing.T, st v1.ContainerStatus) {
				wantWaiting(t, st, ReasonPodInitializing)
			},
		},
		{
			name:     "init container gone with a terminated status before: that status kept",
			pod:      withInit,
			init:     true,
			observed: observedOf(inst("a", "c2", container.StateRunning, 0, 0, t0)),
			prev:     cs(func() v1.ContainerStatus { s := exited("i", 0); s.ContainerID = "containerd://c1"; return s }()),
			check: func(t *testing.T, st v1.ContainerStatus) {
				if st.State.Terminated == nil || st.State.Terminated.Message == msgInitLostAfterInit || st.ContainerID != "containerd://c1" {
					t.Fatalf("status %+v, want the previous terminated status", st)
				}
			},
		},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := ContainerStatuses(tc.pod, tc.init, tc.observed, tc.waiting, tc.prev, "")
			if len(out) != 1 {
				t.Fatalf("got %d statuses", len(out))
			}
			tc.check(t, out[0])
		})
	}
}

func wantWaiting(t *testing.T, st v1.ContainerStatus, reason string) {
	t.Helper()
	if st.State.Waiting == nil || st.State.Waiting.Reason != reason {
		t.Fatalf("state %+v, want waiting %q", st.State, reason)
	}
}

func TestContainerStatusesOrder(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, []string{"z-init", "a-init"}, nil, "zeta", "alpha", "mid")
	apps := ContainerStatuses(pod, false, nil, nil, nil, "")
	if apps[0].Name != "alpha" || apps[1].Name != "mid" || apps[2].Name != "zeta" {
		t.Errorf("app statuses must be sorted by name: %v", names(apps))
	}
	inits := ContainerStatuses(pod, true, nil, nil, nil, "")
	if inits[0].Name != "z-init" || inits[1].Name != "a-init" {
		t.Errorf("init statuses must follow the spec: %v", names(inits))
	}
}

func names(list []v1.ContainerStatus) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return out
}

func TestSetStartedAndReady(t *testing.T) {
	pod := podOf(v1.RestartPolicyAlways, []string{"i"}, []string{"s"}, "a", "b", "c")
	pod.Spec.Containers[1].ReadinessProbe = &v1.Probe{}
	pod.Spec.Containers[2].StartupProbe = &v1.Probe{}
	apps := cs(running("a"), running("b"), running("c"))
	apps[1].ContainerID = "containerd://b1"
	inits := cs(running("s"), exited("i", 0))

	// Without a prober, probes are ignored.
	SetStartedAndReady(pod, inits, apps, nil)
	for _, st := range append(apps, inits[0]) {
		if !st.Ready || st.Started == nil || !*st.Started {
			t.Errorf("%s: ready=%v started=%v", st.Name, st.Ready, st.Started)
		}
	}
	if !inits[1].Ready || *inits[1].Started {
		t.Errorf("init exited 0 must be ready and not started")
	}

	results := map[string]bool{"b1": true}
	probes := func(kind ProbeKind, name, id string) (bool, bool) {
		if kind == ReadinessProbe && id == "containerd://b1" {
			v, ok := results["b1"]
			return v, ok
		}
		return false, false
	}
	SetStartedAndReady(pod, inits, apps, probes)
	if !apps[1].Ready {
		t.Errorf("b: readiness success must make it ready")
	}
	if *apps[2].Started || apps[2].Ready {
		t.Errorf("c: startup probe without result: not started, not ready")
	}
	delete(results, "b1")
	SetStartedAndReady(pod, inits, apps, probes)
	if apps[1].Ready {
		t.Errorf("b: readiness probe without result must not be ready")
	}

	failed := cs(exited("i", 1))
	SetStartedAndReady(pod, failed, nil, nil)
	if failed[0].Ready {
		t.Errorf("failed init container must not be ready")
	}
}
