package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/volume"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
)

// The integration tests run against a real CRI runtime when
// GOKUBELET_CRI_ENDPOINT is set (make test: its instance test-rt, from
// hack/containerd.sh up test-rt, socket `hack/containerd.sh socket test-rt`,
// images from hack/images.sh test-rt). When
// the variable is set but the runtime does not answer, they fail: a broken
// environment must not pass as a skipped test.
func realManager(t *testing.T) *Manager {
	t.Helper()
	ep := os.Getenv("GOKUBELET_CRI_ENDPOINT")
	if ep == "" {
		t.Skip("GOKUBELET_CRI_ENDPOINT is not set")
	}
	if strings.HasPrefix(ep, "/") {
		ep = "unix://" + ep
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	// The volume manager, set up before each container as the kubelet's
	// pod worker does.
	vols := volume.New(volume.Options{RootDir: dir + "/root"})
	t.Cleanup(func() { hostfs.UnmountAll(dir) })
	m, err := New(ctx, Options{
		Mounts: func(ctx context.Context, pod *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]container.Mount, error) {
			if err := vols.SetUpPod(ctx, pod); err != nil {
				return nil, err
			}
			return vols.ContainerMounts(ctx, pod, c, env)
		},
		RuntimeEndpoint:       ep,
		RuntimeRequestTimeout: 30 * time.Second,
		RootDir:               dir + "/root",
		PodLogsDir:            dir + "/logs",
		ResolvConf:            "/etc/resolv.conf",
		Recorder:              record.NewFakeRecorder(1000),
	})
	if err != nil {
		t.Fatalf("CRI endpoint %s from GOKUBELET_CRI_ENDPOINT is unusable: %v", ep, err)
	}
	return m
}

// syncUntil calls GetPodStatus+SyncPod until done(status) or the deadline.
func syncUntil(t *testing.T, m *Manager, pod *v1.Pod, done func(*container.PodStatus) bool) *container.PodStatus {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	var last container.SyncResult
	for time.Now().Before(deadline) {
		st, err := m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if done(st) {
			return st
		}
		last = m.SyncPod(ctx, pod, st)
		if err := last.Error(); err != nil && !OnlyDeferred(last) {
			t.Fatalf("SyncPod: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // test polling only
	}
	t.Fatalf("pod did not converge; last steps %+v", last.Steps)
	return nil
}

func TestIntegrationPodLifecycle(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	uid := types.UID(fmt.Sprintf("it-%d", time.Now().UnixNano()))
	grace := int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kuberuntime-it", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			InitContainers: []v1.Container{{
				Name: "init", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullNever,
				Command:                []string{"sh", "-c", "echo ready > /work/ready; echo init-done > /dev/termination-log"},
				TerminationMessagePath: "/dev/termination-log",
				VolumeMounts:           []v1.VolumeMount{{Name: "work", MountPath: "/work"}},
			}},
			Containers: []v1.Container{{
				Name: "app", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullNever,
				Command:      []string{"sh", "-c", "test -f /work/ready && exec /testserver --http-port=8080"},
				VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/work"}},
			}},
			Volumes: []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
	t.Cleanup(func() {
		_ = m.KillPod(ctx, pod, nil, nil)
		_ = m.RemovePod(ctx, uid)
	})

	st := syncUntil(t, m, pod, func(s *container.PodStatus) bool {
		l := s.Latest("app")
		return l != nil && l.State == container.StateRunning
	})
	if len(st.IPs) == 0 {
		t.Errorf("no pod IP: %+v", st.Sandboxes)
	}
	in := st.Latest("init")
	if in == nil || in.State != container.StateExited || in.ExitCode != 0 {
		t.Fatalf("init container: %+v", in)
	}
	if strings.TrimSpace(in.Message) != "init-done" {
		t.Errorf("termination message %q", in.Message)
	}
	app := st.Latest("app")
	if app.RestartCount != 0 || app.ImageRef == "" || app.StartedAt.IsZero() {
		t.Errorf("app: %+v", app)
	}

	// A restarted kubelet (new Manager) adopts the pod and changes nothing.
	m2 := realManager(t)
	st2, err := m2.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if r := m2.SyncPod(ctx, pod, st2); len(r.Steps) != 0 {
		t.Fatalf("restarted manager did %+v", r.Steps)
	}
	if pods, err := m2.GetPods(ctx, false); err != nil || !hasPod(pods, uid) {
		t.Fatalf("GetPods(false): %v, pod missing", err)
	}

	logFile := PodLogDir(m.opts.PodLogsDir, pod.Namespace, pod.Name, string(uid)) + "/app/0.log"
	if _, err := os.Stat(logFile); err != nil {
		t.Errorf("container log: %v", err)
	}

	if err := m.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Running()) != 0 || st.ReadySandbox() != nil {
		t.Fatalf("after KillPod: running %d, sandbox ready %v", len(st.Running()), st.ReadySandbox() != nil)
	}
	if err := m.RemovePod(ctx, uid); err != nil {
		t.Fatal(err)
	}
	st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Sandboxes) != 0 || len(st.Containers) != 0 {
		t.Fatalf("after RemovePod: %d sandboxes, %d containers", len(st.Sandboxes), len(st.Containers))
	}
}

func hasPod(pods []*container.RunningPod, uid types.UID) bool {
	for _, p := range pods {
		if p.UID == uid {
			return true
		}
	}
	return false
}

func TestIntegrationCrashLoop(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	uid := types.UID(fmt.Sprintf("it-crash-%d", time.Now().UnixNano()))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kuberuntime-crash", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyOnFailure,
			Containers: []v1.Container{{
				Name: "crash", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullNever,
				Command: []string{"sh", "-c", "exit 3"},
			}},
		},
	}
	t.Cleanup(func() {
		_ = m.KillPod(ctx, pod, nil, nil)
		_ = m.RemovePod(ctx, uid)
	})
	st := syncUntil(t, m, pod, func(s *container.PodStatus) bool {
		l := s.Latest("crash")
		return l != nil && l.State == container.StateExited && l.RestartCount == 1
	})
	l := st.Latest("crash")
	if l.ExitCode != 3 || l.FinishedAt.IsZero() {
		t.Fatalf("exited instance: %+v", l)
	}
	r := m.SyncPod(ctx, pod, st)
	if len(r.Steps) != 1 || r.Steps[0].Reason != ReasonCrashLoopBackOff || !strings.HasPrefix(r.Steps[0].Message, "back-off 10s restarting failed container=crash") || r.RetryAfter() <= 0 {
		t.Fatalf("want CrashLoopBackOff 10s, got %+v", r.Steps)
	}
}

// TestIntegrationRecursiveReadOnly: a read-only hostPath volume with a
// tmpfs mounted below it. The runtime is asked, independently of the
// manager, whether its default handler supports recursive read-only
// mounts; the test then asserts what that runtime must do: with support,
// IfPossible and Enabled make the submount read-only too; without
// (containerd 1.6), IfPossible gives a plain read-only bind whose submount
// stays writable, and Enabled refuses the container with upstream's reason.
func TestIntegrationRecursiveReadOnly(t *testing.T) {
	m := realManager(t)
	ctx := context.Background()
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	supported := false
	for _, h := range resp.GetRuntimeHandlers() {
		if h.GetName() == "" {
			supported = h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	v, err := m.runtime.Version(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("runtime %s %s: default handler supports recursive read-only mounts: %v", v.GetRuntimeName(), v.GetRuntimeVersion(), supported)

	src := t.TempDir()
	if err := os.Mkdir(src+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hostfs.MountTmpfs(src+"/sub", 1<<20); err != nil {
		t.Fatalf("mounting a tmpfs below the volume: %v", err)
	}
	t.Cleanup(func() { hostfs.UnmountAll(src) })

	newPod := func(mode v1.RecursiveReadOnlyMode) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "rro-" + strings.ToLower(string(mode)), Namespace: "default", UID: types.UID(fmt.Sprintf("rro-%d", time.Now().UnixNano()))},
			Spec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{
					Name: "main", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullNever,
					Command:                []string{"sh", "-c", "if touch /data/sub/probe 2>/dev/null; then echo sub=writable; else echo sub=readonly; fi > /dev/termination-log"},
					TerminationMessagePath: "/dev/termination-log",
					VolumeMounts:           []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &mode}},
				}},
				Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: src}}}},
			},
		}
	}
	cleanup := func(pod *v1.Pod) {
		t.Cleanup(func() {
			_ = m.KillPod(ctx, pod, nil, nil)
			_ = m.RemovePod(ctx, pod.UID)
		})
	}
	saw := func(pod *v1.Pod) string {
		st := syncUntil(t, m, pod, func(s *container.PodStatus) bool {
			l := s.Latest("main")
			return l != nil && l.State == container.StateExited
		})
		return strings.TrimSpace(st.Latest("main").Message)
	}

	want := "sub=writable"
	if supported {
		want = "sub=readonly"
	}
	ifp := newPod(v1.RecursiveReadOnlyIfPossible)
	cleanup(ifp)
	if got := saw(ifp); got != want {
		t.Errorf("IfPossible (runtime support %v): the container saw %q, want %q", supported, got, want)
	}

	en := newPod(v1.RecursiveReadOnlyEnabled)
	cleanup(en)
	if supported {
		if got := saw(en); got != "sub=readonly" {
			t.Errorf("Enabled: the container saw %q", got)
		}
		return
	}
	st, err := m.GetPodStatus(ctx, en.UID, en.Name, en.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	r := m.SyncPod(ctx, en, st)
	w := r.WaitingReasons()["main"]
	if w.Reason != ReasonCreateContainerConfigError || w.Message != `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime` {
		t.Errorf("Enabled on a runtime without support: %+v", w)
	}
}

// TestIntegrationContainerEventStream: on containerd 2 (and 1.7) the CRI
// event stream reports a container's exit; containerd 1.6 has no stream
// and says Unimplemented, which is what the PLEG falls back on.
func TestIntegrationContainerEventStream(t *testing.T) {
	m := realManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	version, err := m.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	connected := make(chan struct{})
	var once sync.Once
	stops := make(chan string, 100)
	ended := make(chan error, 1)
	go func() {
		ended <- m.WatchContainerEvents(ctx, func() { once.Do(func() { close(connected) }) }, func(e *runtimeapi.ContainerEventResponse) {
			if e.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
				stops <- e.GetContainerId()
			}
		})
	}()
	if strings.HasPrefix(strings.TrimPrefix(version, "v"), "1.6") {
		select {
		case err := <-ended:
			if grpcstatus.Code(err) != codes.Unimplemented {
				t.Fatalf("containerd %s: the event stream ended with %v, want Unimplemented", version, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("containerd %s: the event stream neither failed nor ended", version)
		}
		return
	}
	select {
	case <-connected:
	case err := <-ended:
		t.Fatalf("containerd %s: the event stream ended: %v", version, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("containerd %s: the event stream never connected", version)
	}

	uid := types.UID(fmt.Sprintf("it-events-%d", time.Now().UnixNano()))
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kuberuntime-events", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "brief", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullNever,
				Command: []string{"sh", "-c", "exit 0"},
			}},
		},
	}
	t.Cleanup(func() {
		_ = m.KillPod(context.Background(), pod, nil, nil)
		_ = m.RemovePod(context.Background(), uid)
	})
	st := syncUntil(t, m, pod, func(s *container.PodStatus) bool {
		l := s.Latest("brief")
		return l != nil && l.State == container.StateExited
	})
	id := st.Latest("brief").ID
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-stops:
			if got == id {
				return
			}
		case err := <-ended:
			t.Fatalf("the event stream ended before the container's exit was seen: %v", err)
		case <-deadline:
			t.Fatalf("containerd %s: no CONTAINER_STOPPED_EVENT for container %s", version, id)
		}
	}
}
