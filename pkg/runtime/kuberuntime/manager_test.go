package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	crierrors "k8s.io/cri-api/pkg/errors"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
)

type env struct {
	rs  *critest.FakeRuntimeService
	is  *critest.FakeImageService
	clk *clocktesting.FakeClock
	rec *record.FakeRecorder
	dir string
	m   *Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{rs: critest.NewFakeRuntimeService(), is: critest.NewFakeImageService(),
		clk: clocktesting.NewFakeClock(time.Now()), rec: record.NewFakeRecorder(1000), dir: t.TempDir()}
	resolv := filepath.Join(e.dir, "resolv.conf")
	os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.org\noptions edns0\n"), 0o644)
	e.m = e.manager(t, resolv)
	return e
}

func (e *env) manager(t *testing.T, resolv string) *Manager {
	m, err := NewWithServices(context.Background(), e.rs, e.is, Options{
		RootDir: filepath.Join(e.dir, "root"), PodLogsDir: filepath.Join(e.dir, "logs"),
		ResolvConf: resolv, Recorder: e.rec, Clock: e.clk, MachineMemoryCapacity: 8 << 30,
		Mounts: fakeMounts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeMounts stands in for the volume manager: /volumes/<name>, read-only.
func fakeMounts(_ context.Context, _ *v1.Pod, c *v1.Container, _ func(string) (string, bool)) ([]container.Mount, error) {
	var out []container.Mount
	for _, vm := range c.VolumeMounts {
		out = append(out, container.Mount{Name: vm.Name, HostPath: "/volumes/" + vm.Name, ContainerPath: vm.MountPath, ReadOnly: true,
			Propagation: v1.MountPropagationHostToContainer})
	}
	return out, nil
}

func testPod() *v1.Pod {
	grace := int64(7)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "app", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"/testserver"}, Args: []string{"--greeting=$(GREETING)", "$$(KEEP)"},
				Env:   []v1.EnvVar{{Name: "WHO", Value: "world"}, {Name: "GREETING", Value: "hello-$(WHO)"}, {Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Ports: []v1.ContainerPort{{ContainerPort: 8080, HostPort: 18080}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("2Gi")},
				},
				TerminationMessagePath: "/dev/termination-log",
				VolumeMounts:           []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}},
			Volumes: []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

func (e *env) sync(t *testing.T, pod *v1.Pod) (container.SyncResult, *container.PodStatus) {
	t.Helper()
	ctx := context.Background()
	st, err := e.m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return e.m.SyncPod(ctx, pod, st), st
}

func steps(r container.SyncResult) string {
	var s []string
	for _, st := range r.Steps {
		x := string(st.Action)
		if st.Container != "" {
			x += ":" + st.Container
		}
		if st.Reason != "" {
			x += "(" + st.Reason + ")"
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func TestSyncPodLifecycle(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	ctx := context.Background()

	r, _ := e.sync(t, pod)
	if got := steps(r); got != "CreatePodSandbox StartContainer:app" {
		t.Fatalf("first sync: %s (%v)", got, r.Error())
	}

	// The sandbox config carries identity, DNS, ports, cgroup parent.
	var sb *critest.FakePodSandbox
	for _, s := range e.rs.Sandboxes {
		sb = s
	}
	if sb.Labels[LabelPodUID] != "uid-1" || sb.Labels[LabelPodName] != "web" || sb.Labels["app"] != "web" {
		t.Errorf("sandbox labels %v", sb.Labels)
	}
	// The fake keeps only status; check the config through SandboxConfig.
	cfg, _ := e.m.SandboxConfig(pod, 0)
	if cfg.LogDirectory != filepath.Join(e.dir, "logs", "ns1_web_uid-1") {
		t.Errorf("log dir %s", cfg.LogDirectory)
	}
	if got := cfg.DnsConfig.Servers; len(got) != 1 || got[0] != "192.0.2.53" {
		t.Errorf("ClusterFirst without cluster DNS should use the host's: %v", got)
	}
	if len(cfg.PortMappings) != 1 || cfg.PortMappings[0].HostPort != 18080 {
		t.Errorf("port mappings %v", cfg.PortMappings)
	}
	if cfg.Linux.CgroupParent != "/kubepods/burstable/poduid-1" {
		t.Errorf("cgroup parent %s", cfg.Linux.CgroupParent)
	}

	var ctr *critest.FakeContainer
	for _, c := range e.rs.Containers {
		ctr = c
	}
	if ctr.Labels[LabelContainerName] != "app" || ctr.Annotations[AnnotationRestartCount] != "0" {
		t.Errorf("container labels %v annotations %v", ctr.Labels, ctr.Annotations)
	}
	if ctr.LinuxResources.CpuShares != 256 || ctr.LinuxResources.CpuQuota != 50000 || ctr.LinuxResources.MemoryLimitInBytes != 2<<30 {
		t.Errorf("resources %+v", ctr.LinuxResources)
	}
	if ctr.LinuxResources.OomScoreAdj != 1000-1000*(1<<30)/(8<<30) {
		t.Errorf("oom score adj %d", ctr.LinuxResources.OomScoreAdj)
	}

	st, err := e.m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Sandboxes) != 1 || st.Sandboxes[0].State != container.SandboxReady || len(st.IPs) == 0 {
		t.Fatalf("sandbox status %+v", st.Sandboxes)
	}
	app := st.Latest("app")
	if app == nil || app.State != container.StateRunning || app.Hash != HashContainer(&pod.Spec.Containers[0]) || app.Image != pod.Spec.Containers[0].Image {
		t.Fatalf("app status %+v", app)
	}

	// Steady state: nothing to do. A fresh manager (kubelet restart) adopts.
	if r, _ := e.sync(t, pod); len(r.Steps) != 0 {
		t.Fatalf("steady state did %s", steps(r))
	}
	e.m = e.manager(t, "")
	if r, _ := e.sync(t, pod); len(r.Steps) != 0 {
		t.Fatalf("after restart did %s", steps(r))
	}

	// Crash: restarted with restart count 1, then back-off.
	crash := func() {
		e.rs.Lock()
		for _, c := range e.rs.Containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				c.State = runtimeapi.ContainerState_CONTAINER_EXITED
				c.ExitCode = 1
				c.FinishedAt = e.clk.Now().UnixNano()
			}
		}
		e.rs.Unlock()
	}
	crash()
	r, _ = e.sync(t, pod)
	if got := steps(r); got != "StartContainer:app" {
		t.Fatalf("after crash: %s", got)
	}
	st, _ = e.m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if l := st.Latest("app"); l.RestartCount != 1 || l.State != container.StateRunning {
		t.Fatalf("restarted instance %+v", l)
	}
	crash()
	e.clk.Step(time.Second)
	r, _ = e.sync(t, pod)
	if got := steps(r); got != "StartContainer:app(CrashLoopBackOff)" {
		t.Fatalf("second crash: %s", got)
	}
	if want := "back-off 10s restarting failed container=app pod=web_ns1(uid-1)"; r.Steps[0].Message != want {
		t.Fatalf("message %q", r.Steps[0].Message)
	}
	if ra := r.RetryAfter(); ra != 9*time.Second {
		t.Fatalf("RetryAfter %v, want 9s", ra)
	}
	if !OnlyDeferred(r) {
		t.Fatalf("OnlyDeferred false")
	}
	e.clk.Step(10 * time.Second)
	if r, _ = e.sync(t, pod); steps(r) != "StartContainer:app" {
		t.Fatalf("after back-off: %s", steps(r))
	}

	// Kill and remove.
	if err := e.m.KillPod(ctx, pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	st, _ = e.m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if len(st.Running()) != 0 || st.ReadySandbox() != nil {
		t.Fatalf("after kill: %+v", st)
	}
	if pods, _ := e.m.GetPods(ctx, false); len(pods) != 0 {
		t.Fatalf("GetPods(false) after kill: %d", len(pods))
	}
	if err := e.m.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(e.rs.Containers) != 0 || len(e.rs.Sandboxes) != 0 {
		t.Fatalf("left after remove: %d containers, %d sandboxes", len(e.rs.Containers), len(e.rs.Sandboxes))
	}
}

func TestContainerConfig(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	sb, _ := e.m.SandboxConfig(pod, 0)
	cfg, err := e.m.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 3, "sha256:abc", sb, []string{"10.1.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Args, " "); got != "--greeting=hello-world $(KEEP)" {
		t.Errorf("args %q", got)
	}
	envs := map[string]string{}
	for _, kv := range cfg.Envs {
		envs[kv.Key] = string(kv.Value)
	}
	if envs["GREETING"] != "hello-world" || envs["POD"] != "web" {
		t.Errorf("env %v", envs)
	}
	if cfg.LogPath != "app/3.log" || cfg.Metadata.Attempt != 3 {
		t.Errorf("log path %s attempt %d", cfg.LogPath, cfg.Metadata.Attempt)
	}
	if _, err := os.Stat(filepath.Join(sb.LogDirectory, "app")); err != nil {
		t.Errorf("container log dir: %v", err)
	}
	mounts := map[string]*runtimeapi.Mount{}
	for _, mt := range cfg.Mounts {
		mounts[mt.ContainerPath] = mt
	}
	// Volume mounts come from the volume manager (Options.Mounts).
	if mt := mounts["/scratch"]; mt == nil || mt.HostPath != "/volumes/scratch" || !mt.Readonly || mt.Propagation != runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER {
		t.Errorf("volume mount %v", mt)
	}
	if mounts["/dev/termination-log"] == nil {
		t.Errorf("mounts %v", mounts)
	}
	if cfg.Annotations[AnnotationTerminationGracePeriod] != "7" {
		t.Errorf("annotations %v", cfg.Annotations)
	}
}

func TestImageFailuresBecomeWaitingReasons(t *testing.T) {
	cases := []struct {
		name   string
		image  string
		policy v1.PullPolicy
		want   string
	}{
		{"never pull, absent", "example.com/absent:1", v1.PullNever, images.ReasonErrImageNeverPull},
		{"invalid name", "Bad:Name:x", v1.PullIfNotPresent, images.ReasonInvalidImageName},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pod := testPod()
			pod.Spec.Containers[0].Image, pod.Spec.Containers[0].ImagePullPolicy = tc.image, tc.policy
			r, _ := e.sync(t, pod)
			if got := r.WaitingReasons()["app"].Reason; got != tc.want {
				t.Fatalf("reason %q, want %q (%s)", got, tc.want, steps(r))
			}
		})
	}
}

func TestCreateAndStartErrors(t *testing.T) {
	for _, tc := range []struct{ call, want string }{{"CreateContainer", ReasonCreateContainerError}, {"StartContainer", ReasonRunContainerError}} {
		e := newEnv(t)
		e.rs.InjectError(tc.call, context.DeadlineExceeded)
		r, _ := e.sync(t, testPod())
		if got := r.WaitingReasons()["app"].Reason; got != tc.want {
			t.Fatalf("%s: reason %q (%s)", tc.call, got, steps(r))
		}
	}
}

func TestRelistOnlyInspectsChanges(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.sync(t, pod)
	ctx := context.Background()
	if _, err := e.m.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	e.rs.Lock()
	e.rs.Called = nil
	e.rs.Unlock()
	pods, err := e.m.Relist(ctx)
	if err != nil || len(pods) != 1 || pods[0].Latest("app") == nil {
		t.Fatalf("relist: %v %+v", err, pods)
	}
	if got := strings.Join(e.rs.GetCalls(), ","); got != "ListPodSandbox,ListContainers" {
		t.Fatalf("unchanged relist made calls %s", got)
	}
}

func TestSandboxDiedRecreates(t *testing.T) {
	e := newEnv(t)
	pod := testPod()
	e.sync(t, pod)
	e.rs.Lock()
	for _, s := range e.rs.Sandboxes {
		s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	for _, c := range e.rs.Containers {
		c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		c.ExitCode = 137
	}
	e.rs.Unlock()
	r, _ := e.sync(t, pod)
	if got := steps(r); got != "CreatePodSandbox StartContainer:app" {
		t.Fatalf("got %s", got)
	}
	st, _ := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if st.Sandboxes[0].Attempt != 1 || st.Latest("app").RestartCount != 1 {
		t.Fatalf("attempt %d restart %d", st.Sandboxes[0].Attempt, st.Latest("app").RestartCount)
	}
}

// Without a volume manager, a container that mounts a volume waits with
// CreateContainerConfigError instead of starting without its files.
func TestVolumeMountsNeedAVolumeManager(t *testing.T) {
	e := newEnv(t)
	m, err := NewWithServices(context.Background(), e.rs, e.is, Options{
		RootDir: filepath.Join(e.dir, "root"), PodLogsDir: filepath.Join(e.dir, "logs"), Recorder: e.rec, Clock: e.clk, MachineMemoryCapacity: 8 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	r, _ := e.sync(t, testPod())
	if got := steps(r); got != "CreatePodSandbox StartContainer:app(CreateContainerConfigError)" || !strings.Contains(r.Error().Error(), `volume "scratch"`) {
		t.Errorf("steps %s: %v", got, r.Error())
	}
}

// An image volume's image is made present by its pull policy when a
// container that mounts it starts, and reaches the runtime as CRI
// Mount.image with the image's ID, read-only, the subPath inside it; a
// failed pull makes the container wait with the pull's reason, and a
// containerd that cannot mount images is named.
func TestImageVolumeMounts(t *testing.T) {
	withImageVolume := func(e *env, policy v1.PullPolicy) *v1.Pod {
		pod := testPod()
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "tools", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/tools:1", PullPolicy: policy}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "tools", MountPath: "/tools", SubPath: "bin"})
		e.m.opts.Mounts = func(ctx context.Context, p *v1.Pod, c *v1.Container, env func(string) (string, bool)) ([]container.Mount, error) {
			out, _ := fakeMounts(ctx, p, c, env)
			out[1] = container.Mount{Name: "tools", ContainerPath: "/tools", ReadOnly: true, Image: "example.com/tools:1", PullPolicy: policy, ImageSubPath: "bin"}
			return out, nil
		}
		return pod
	}

	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	counts := func() [3]float64 {
		f := metricstest.ScrapeRegistry(t, reg)
		return [3]float64{f.Sum("kubelet_image_volume_requested_total", nil), f.Sum("kubelet_image_volume_mounted_succeed_total", nil), f.Sum("kubelet_image_volume_mounted_errors_total", nil)}
	}
	delta := func(before, after [3]float64) [3]float64 {
		return [3]float64{after[0] - before[0], after[1] - before[1], after[2] - before[2]}
	}
	e := newEnv(t)
	pod := withImageVolume(e, v1.PullIfNotPresent)
	before := counts()
	if r, _ := e.sync(t, pod); r.Error() != nil {
		t.Fatalf("sync: %v (%s)", r.Error(), steps(r))
	}
	if d := delta(before, counts()); d != [3]float64{1, 1, 0} {
		t.Errorf("image volume metrics grew by %v (requested, succeeded, failed), want [1 1 0]", d)
	}
	sb, _ := e.m.SandboxConfig(pod, 0)
	cfg, err := e.m.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, "sha256:abc", sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	var img *runtimeapi.Mount
	for _, mt := range cfg.Mounts {
		if mt.ContainerPath == "/tools" {
			img = mt
		}
	}
	pulled, _ := e.is.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: "example.com/tools:1"}, false)
	if pulled.GetImage() == nil {
		t.Fatal("the image volume's image was not pulled")
	}
	if img == nil || img.GetImage().GetImage() != pulled.GetImage().GetId() || img.GetImage().GetUserSpecifiedImage() != "example.com/tools:1" ||
		img.HostPath != "" || !img.Readonly || img.ImageSubPath != "bin" {
		t.Errorf("image mount %+v, want image %s, read-only, subPath bin", img, pulled.GetImage().GetId())
	}

	// Never, and the image is absent: the container waits as for its own
	// image.
	e = newEnv(t)
	pod = withImageVolume(e, v1.PullNever)
	r, _ := e.sync(t, pod)
	if got := r.WaitingReasons()["app"].Reason; got != images.ReasonErrImageNeverPull {
		t.Errorf("absent image volume with Never: reason %q (%s)", got, steps(r))
	}

	// The runtime cannot mount the image volume: counted as failed.
	e = newEnv(t)
	pod = withImageVolume(e, v1.PullIfNotPresent)
	e.rs.InjectError("CreateContainer", fmt.Errorf("rpc error: code = Unknown desc = %w: layer not found", crierrors.ErrImageVolumeMountFailed))
	before = counts()
	r, _ = e.sync(t, pod)
	if got := r.WaitingReasons()["app"].Reason; got != ReasonCreateContainerError {
		t.Errorf("image volume mount refused by the runtime: reason %q (%s)", got, steps(r))
	}
	if d := delta(before, counts()); d != [3]float64{1, 0, 1} {
		t.Errorf("image volume metrics grew by %v (requested, succeeded, failed), want [1 0 1]", d)
	}

	// containerd 1.6 would mount an empty host path: refused by name.
	e = newEnv(t)
	e.m.runtimeName, e.m.runtimeVersion = "containerd", "1.6.20~ds1"
	pod = withImageVolume(e, v1.PullIfNotPresent)
	r, _ = e.sync(t, pod)
	w := r.WaitingReasons()["app"]
	if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, "containerd 1.6.20~ds1, cannot mount image volumes") {
		t.Errorf("image volume on containerd 1.6: %+v (%s)", w, steps(r))
	}
}

func TestImageVolumeSupport(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		ok            bool
	}{
		{"containerd", "1.6.20~ds1", false},
		{"containerd", "v1.7.27", false},
		{"containerd", "v2.0.5", false},
		{"containerd", "v2.1.0", true},
		{"containerd", "v2.4.2", true},
		{"containerd", "v3.0.0", true},
		{"containerd", "unknown", true},
		{"cri-o", "1.30.0", true},
	} {
		if err := imageVolumeSupport(tc.name, tc.version); (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok=%v", tc.name, tc.version, err, tc.ok)
		}
	}
}
