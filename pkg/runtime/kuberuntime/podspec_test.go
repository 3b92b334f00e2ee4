package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/dns"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// recordingRuntime remembers what the fake runtime does not: container
// configs, sandbox handlers, the order of stops and execs.
type recordingRuntime struct {
	*critest.FakeRuntimeService
	mu       sync.Mutex
	configs  map[string]*runtimeapi.ContainerConfig // by container name
	handlers []string
	sandbox  *runtimeapi.PodSandboxConfig
	events   []string // "exec:<id>", "stop:<name>"
	names    map[string]string
	// stopDelay delays the stop of a container by name.
	stopDelay map[string]time.Duration
	// execErr fails every exec with it; execCode is the exit code.
	execErr error
	// statusHandlers are the runtime handlers Status reports.
	statusHandlers []*runtimeapi.RuntimeHandler
	// status, when set, is what Status answers (handlers, features).
	status *runtimeapi.StatusResponse
	// hangExec names a container whose execs run until it is stopped (or
	// their context ends); execEnds records how each ended ("stopped",
	// "cancelled") and the timeout it was given; stopTimeouts the grace
	// each stop got.
	hangExec     string
	hung         chan struct{}
	execEnds     []string
	stopTimeouts map[string]int64
}

func (r *recordingRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	r.mu.Lock()
	st, hs := r.status, r.statusHandlers
	r.mu.Unlock()
	if st != nil {
		return st, nil
	}
	resp, err := r.FakeRuntimeService.Status(ctx, verbose)
	if err == nil && hs != nil {
		resp.RuntimeHandlers = hs
	}
	return resp, err
}

func newRecordingRuntime() *recordingRuntime {
	return &recordingRuntime{FakeRuntimeService: critest.NewFakeRuntimeService(), configs: map[string]*runtimeapi.ContainerConfig{}, names: map[string]string{}, stopDelay: map[string]time.Duration{}}
}

func (r *recordingRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	r.handlers = append(r.handlers, handler)
	r.sandbox = cfg
	r.mu.Unlock()
	return r.FakeRuntimeService.RunPodSandbox(ctx, cfg, handler)
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.FakeRuntimeService.CreateContainer(ctx, sb, cfg, sbc)
	r.mu.Lock()
	r.configs[cfg.Metadata.Name] = cfg
	r.names[id] = cfg.Metadata.Name
	r.mu.Unlock()
	if err == nil {
		// The fake keeps no mounts or log path; the real runtime reports them.
		r.FakeRuntimeService.Lock()
		c := r.FakeRuntimeService.Containers[id]
		c.Mounts = cfg.Mounts
		c.LogPath = filepath.Join(sbc.GetLogDirectory(), cfg.LogPath)
		r.FakeRuntimeService.Unlock()
	}
	return id, err
}

func (r *recordingRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	r.mu.Lock()
	name := r.names[id]
	d := r.stopDelay[name]
	r.mu.Unlock()
	time.Sleep(d)
	r.mu.Lock()
	r.events = append(r.events, "stop:"+name)
	if r.stopTimeouts != nil {
		r.stopTimeouts[name] = timeout
	}
	if name == r.hangExec && r.hung != nil {
		close(r.hung)
		r.hung = nil
	}
	r.mu.Unlock()
	return r.FakeRuntimeService.StopContainer(ctx, id, timeout)
}

func (r *recordingRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r.mu.Lock()
	r.events = append(r.events, "exec:"+r.names[id]+":"+strings.Join(cmd, " "))
	err := r.execErr
	var hung chan struct{}
	if r.names[id] == r.hangExec {
		if r.hung == nil {
			r.hung = make(chan struct{})
		}
		hung = r.hung
	}
	r.mu.Unlock()
	if hung != nil {
		end := "stopped"
		select {
		case <-hung:
		case <-ctx.Done():
			end = "cancelled"
		}
		r.mu.Lock()
		r.execEnds = append(r.execEnds, fmt.Sprintf("%s (timeout %v)", end, timeout))
		r.mu.Unlock()
	}
	return nil, nil, err
}

func (r *recordingRuntime) config(name string) *runtimeapi.ContainerConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.configs[name]
}

func (r *recordingRuntime) eventLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

type psEnv struct {
	rs  *recordingRuntime
	is  *critest.FakeImageService
	rec *record.FakeRecorder
	dir string
	m   *Manager
}

func newPSEnv(t *testing.T, set func(*Options)) *psEnv {
	t.Helper()
	e := &psEnv{rs: newRecordingRuntime(), is: critest.NewFakeImageService(), rec: record.NewFakeRecorder(1000), dir: t.TempDir()}
	resolv := filepath.Join(e.dir, "resolv.conf")
	os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.org\n"), 0o644)
	o := Options{
		RootDir: filepath.Join(e.dir, "root"), PodLogsDir: filepath.Join(e.dir, "logs"),
		ResolvConf: resolv, Recorder: e.rec, Clock: clocktesting.NewFakeClock(time.Now()), MachineMemoryCapacity: 8 << 30,
		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", Mounts: fakeMounts,
	}
	if set != nil {
		set(&o)
	}
	m, err := NewWithServices(context.Background(), e.rs, e.is, o)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

func (e *psEnv) sync(t *testing.T, pod *v1.Pod) container.SyncResult {
	t.Helper()
	st, err := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return e.m.SyncPod(context.Background(), pod, st)
}

func (e *psEnv) events() string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func basicPod(containers ...v1.Container) *v1.Pod {
	if len(containers) == 0 {
		containers = []v1.Container{{Name: "app", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullIfNotPresent}}
	}
	for i := range containers {
		if containers[i].Image == "" {
			containers[i].Image = "gokubelet.local/testimage:1.0"
			containers[i].ImagePullPolicy = v1.PullIfNotPresent
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "uid-ps"},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: containers},
	}
}

func envMap(cfg *runtimeapi.ContainerConfig) map[string]string {
	out := map[string]string{}
	for _, kv := range cfg.Envs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

type fakeObjects map[string]*v1.ConfigMap

func (f fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if cm, ok := f[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestEnvironmentEndToEnd(t *testing.T) {
	e := newPSEnv(t, func(o *Options) {
		o.PodSpec = PodSpecDeps{
			Objects: fakeObjects{"team/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}},
			HostIPs: []string{"192.0.2.1"},
			NodeAllocatable: func() v1.ResourceList {
				return v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}
			},
			ServiceEnv: func(*v1.Pod) ([]v1.EnvVar, error) {
				return []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"}}, nil
			},
		}
	})
	pod := basicPod(v1.Container{
		Name:    "app",
		Command: []string{"sh", "-c", "echo $(MODE) $(KUBERNETES_SERVICE_HOST) $$(MODE) $(NOPE)"},
		EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{
			{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		},
	})
	r := e.sync(t, pod)
	if err := r.Error(); err != nil {
		t.Fatalf("%s: %v", steps(r), err)
	}
	cfg := e.rs.config("app")
	env := envMap(cfg)
	want := map[string]string{"CFG_MODE": "fast", "CFG_LEVEL": "3", "MODE": "fast", "HOST_IP": "192.0.2.1", "POD_IP": critest.FakePodSandboxIPs[0], "MEM": "2048", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q (all: %v)", k, env[k], v, env)
		}
	}
	if got := cfg.Command[2]; got != "echo fast 10.96.0.1 $(MODE) $(NOPE)" {
		t.Errorf("command %q", got)
	}

	// A host-network pod's status.podIP is the node's IP (upstream's
	// conformance "host IP and pod IP as an env var if pod uses host
	// network").
	hn := basicPod(v1.Container{Name: "app", Env: []v1.EnvVar{
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}}}})
	hn.Spec.HostNetwork = true
	hnEnv, err := e.m.containerEnv(context.Background(), hn, &hn.Spec.Containers[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range hnEnv {
		got[v.Name] = v.Value
	}
	if got["POD_IP"] != "192.0.2.1" || got["POD_IPS"] != "192.0.2.1" {
		t.Errorf("host-network pod: POD_IP %q POD_IPS %q, want the node's 192.0.2.1", got["POD_IP"], got["POD_IPS"])
	}

	// A required key that is missing: the container waits with
	// CreateContainerConfigError naming it, and a Failed event says so.
	bad := basicPod(v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
		ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "nokey"}}}}})
	bad.UID = "uid-bad"
	r = e.sync(t, bad)
	w := r.WaitingReasons()["app"]
	if w.Reason != ReasonCreateContainerConfigError || w.Message != "couldn't find key nokey in ConfigMap team/cfg" {
		t.Errorf("waiting %+v", w)
	}
	if ev := e.events(); !strings.Contains(ev, "Warning Failed Error: couldn't find key nokey in ConfigMap team/cfg") {
		t.Errorf("events:\n%s", ev)
	}
}

// An env var from a file in the pod's emptyDir (EnvFiles): read from the
// volume's directory; a volume that is not an emptyDir is refused (static
// pods are not validated by the API server); without VolumeDir (the gate
// off) the container waits with a message naming the gate.
func TestEnvFromFileInVolume(t *testing.T) {
	volDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(volDir, "app.env"), []byte("# written by init\nDB='postgres'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withDir := func(o *Options) {
		o.VolumeDir = func(pod *v1.Pod, name string) (string, error) {
			if name != "shared" {
				return "", fmt.Errorf("volume %q is not set up", name)
			}
			return volDir, nil
		}
	}
	pod := func(uid string, vol v1.VolumeSource) *v1.Pod {
		p := basicPod(v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "DB", ValueFrom: &v1.EnvVarSource{
			FileKeyRef: &v1.FileKeySelector{VolumeName: "shared", Path: "app.env", Key: "DB"}}}}})
		p.UID = types.UID(uid)
		p.Spec.Volumes = []v1.Volume{{Name: "shared", VolumeSource: vol}}
		return p
	}

	e := newPSEnv(t, withDir)
	if r := e.sync(t, pod("uid-ok", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}})); r.Error() != nil {
		t.Fatalf("%s: %v", steps(r), r.Error())
	}
	if got := envMap(e.rs.config("app"))["DB"]; got != "postgres" {
		t.Errorf("DB = %q, want postgres", got)
	}

	r := e.sync(t, pod("uid-hostpath", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: volDir}}))
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, `volume "shared" is not an emptyDir`) {
		t.Errorf("hostPath volume: waiting %+v", w)
	}

	off := newPSEnv(t, nil)
	r = off.sync(t, pod("uid-off", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}))
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, "EnvFiles feature gate") {
		t.Errorf("gate off: waiting %+v", w)
	}
}

func TestServiceEnvNotReadYet(t *testing.T) {
	e := newPSEnv(t, func(o *Options) {
		o.PodSpec.ServiceEnv = func(*v1.Pod) ([]v1.EnvVar, error) {
			return nil, errors.New("services have not yet been read at least once, cannot construct envvars")
		}
	})
	r := e.sync(t, basicPod())
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, "services have not yet been read") {
		t.Errorf("waiting %+v", w)
	}
}

func mounts(cfg *runtimeapi.ContainerConfig) map[string]string {
	out := map[string]string{}
	for _, m := range cfg.Mounts {
		out[m.ContainerPath] = m.HostPath
	}
	return out
}

func TestDNSHostnameAndHosts(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(
		v1.Container{Name: "app"},
		v1.Container{Name: "own-hosts", VolumeMounts: []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}},
	)
	pod.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "box", "sub", ptr.To(true)
	pod.Spec.HostAliases = []v1.HostAlias{{IP: "203.0.113.9", Hostnames: []string{"alias.example"}}}
	pod.Spec.DNSConfig = &v1.PodDNSConfig{Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
	if r := e.sync(t, pod); r.Error() != nil {
		t.Fatalf("%s: %v", steps(r), r.Error())
	}
	sb := e.rs.sandbox
	if sb.Hostname != "box.sub.team.svc.cluster.local" {
		t.Errorf("hostname %q", sb.Hostname)
	}
	if got := dns.ResolvConf(sb.DnsConfig); got != "search team.svc.cluster.local svc.cluster.local cluster.local example.org\nnameserver 10.96.0.10\noptions ndots:2\n" {
		t.Errorf("resolv.conf:\n%s", got)
	}
	hostsPath := filepath.Join(e.dir, "root", "pods", "uid-ps", "etc-hosts")
	if got := mounts(e.rs.config("app"))["/etc/hosts"]; got != hostsPath {
		t.Errorf("app hosts mount %q", got)
	}
	b, _ := os.ReadFile(hostsPath)
	if want := critest.FakePodSandboxIPs[0] + "\tbox.sub.team.svc.cluster.local\tbox\n\n# Entries added by HostAliases.\n203.0.113.9\talias.example\n"; !strings.HasPrefix(string(b), dns.ManagedHostsHeader) || !strings.HasSuffix(string(b), want) {
		t.Errorf("hosts file:\n%s", b)
	}
	if got := mounts(e.rs.config("own-hosts"))["/etc/hosts"]; got == hostsPath {
		t.Errorf("a container mounting /etc/hosts itself got the managed file")
	}

	// Host network: no UTS hostname, the node's hosts file.
	nodeHosts := filepath.Join(e.dir, "node-hosts")
	os.WriteFile(nodeHosts, []byte("192.0.2.1 thenode\n"), 0o644)
	e2 := newPSEnv(t, func(o *Options) { o.PodSpec.NodeHostsFile = nodeHosts })
	hp := basicPod()
	hp.Spec.HostNetwork = true
	if r := e2.sync(t, hp); r.Error() != nil {
		t.Fatalf("%v", r.Error())
	}
	if e2.rs.sandbox.Hostname != "" {
		t.Errorf("host network pod got hostname %q", e2.rs.sandbox.Hostname)
	}
	if got := dns.ResolvConf(e2.rs.sandbox.DnsConfig); got != "search example.org\nnameserver 192.0.2.53\n" {
		t.Errorf("host network ClusterFirst must use the host's resolv.conf:\n%s", got)
	}
	b, _ = os.ReadFile(mounts(e2.rs.config("app"))["/etc/hosts"])
	if string(b) != dns.ManagedHostsHeaderHostNetwork+"192.0.2.1 thenode\n" {
		t.Errorf("host network hosts file:\n%s", b)
	}
}

func TestDNSWarningsAreEvents(t *testing.T) {
	e := newPSEnv(t, func(o *Options) { o.ClusterDNS = nil; o.NodeName = "node-a" })
	if r := e.sync(t, basicPod()); r.Error() != nil {
		t.Fatal(r.Error())
	}
	if ev := e.events(); strings.Count(ev, "MissingClusterDNS") != 2 {
		t.Errorf("want a MissingClusterDNS event on the pod and on the node:\n%s", ev)
	}
}

func TestSecurityContextReachesTheRuntime(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(v1.Container{Name: "app", SecurityContext: &v1.SecurityContext{
		RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_BIND_SERVICE"}},
	}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000},
		Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 60000"}}}
	pod.Spec.ShareProcessNamespace = ptr.To(true)
	if r := e.sync(t, pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	sc := e.rs.config("app").Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 1000 || !sc.NoNewPrivs || !sc.ReadonlyRootfs || sc.Capabilities.DropCapabilities[0] != "ALL" ||
		len(sc.SupplementalGroups) != 2 || sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_POD {
		t.Errorf("security context %+v", sc)
	}
	if e.rs.sandbox.Linux.Sysctls["net.ipv4.ip_local_port_range"] != "1024 60000" {
		t.Errorf("sysctls %v", e.rs.sandbox.Linux.Sysctls)
	}
}

func TestRunAsNonRootChecksTheImageUser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		uid     *int64
		user    string
		wantErr string
	}{
		{"root image", ptr.To[int64](0), "", "container has runAsNonRoot and image will run as root"},
		{"image without a user", nil, "", "container has runAsNonRoot and image will run as root"},
		{"named user", nil, "nobody", "image has non-numeric user (nobody)"},
		{"non-root image", ptr.To[int64](1234), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPSEnv(t, nil)
			pod := basicPod()
			pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			ref := pod.Spec.Containers[0].Image
			e.is.SetFakeImages([]string{ref})
			e.is.Lock()
			if tc.uid != nil {
				e.is.Images[ref].Uid = &runtimeapi.Int64Value{Value: *tc.uid}
			}
			e.is.Images[ref].Username = tc.user
			e.is.Unlock()
			r := e.sync(t, pod)
			w := r.WaitingReasons()["app"]
			if tc.wantErr == "" {
				if w.Reason != "" {
					t.Fatalf("refused: %+v", w)
				}
				return
			}
			if w.Reason != ReasonCreateContainerConfigError || !strings.Contains(w.Message, tc.wantErr) {
				t.Errorf("waiting %+v, want %q", w, tc.wantErr)
			}
		})
	}
}

// Regression: containerd 2 reports user namespace support, and the kubelet
// then created the sandbox without any user namespace option, so a pod
// asking for hostUsers: false silently shared the host's.
func TestHostUsersFalseOnAUsernsRuntimeIsRefusedNotSilentlyShared(t *testing.T) {
	e := newPSEnv(t, nil)
	e.rs.status = &runtimeapi.StatusResponse{
		Status:          &runtimeapi.RuntimeStatus{},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}},
	}
	pod := basicPod()
	pod.Spec.HostUsers = ptr.To(false)
	r := e.sync(t, pod)
	w := r.WaitingReasons()["app"]
	if w.Reason != ReasonCreatePodSandboxError || w.Message != RefusedUserNamespacesNotImplemented {
		t.Errorf("hostUsers on a userns runtime: %+v (%s)", w, steps(r))
	}
	if len(e.rs.handlers) != 0 {
		t.Errorf("a sandbox was created anyway")
	}
}

func TestUnsupportedSandboxFeaturesGiveWaitingReasons(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod()
	pod.Spec.HostUsers = ptr.To(false)
	r := e.sync(t, pod)
	w := r.WaitingReasons()["app"]
	if w.Reason != ReasonCreatePodSandboxError || w.Message != "can't set `spec.hostUsers: false`, runtime does not support user namespaces" {
		t.Errorf("hostUsers: %+v (%s)", w, steps(r))
	}
	if len(e.rs.handlers) != 0 {
		t.Errorf("a sandbox was created anyway")
	}
	// A runtime that supports user namespaces does not make the pod run
	// without one: this kubelet has no mappings to give it (regression:
	// the sandbox was created in the node's user namespace).
	e = newPSEnv(t, nil)
	e.rs.statusHandlers = []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}}
	r = e.sync(t, pod)
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreatePodSandboxError || w.Message != RefusedUserNamespacesNotImplemented {
		t.Errorf("hostUsers on a runtime with user namespaces: %+v (%s)", w, steps(r))
	}
	if len(e.rs.handlers) != 0 {
		t.Errorf("a sandbox without user namespace mappings was created")
	}

	// RuntimeClass: the handler goes to RunPodSandbox; a missing class is a
	// reason; pods without one never look anything up.
	lookups := 0
	e = newPSEnv(t, func(o *Options) {
		o.PodSpec.RuntimeHandler = func(_ context.Context, name string) (string, error) {
			lookups++
			if name == "gvisor" {
				return "runsc", nil
			}
			return "", errors.New(`RuntimeClass "` + name + `" not found`)
		}
	})
	if r := e.sync(t, basicPod()); r.Error() != nil || lookups != 0 || e.rs.handlers[0] != "" {
		t.Fatalf("plain pod: %v, %d lookups, handlers %v", r.Error(), lookups, e.rs.handlers)
	}
	rc := basicPod()
	rc.UID, rc.Spec.RuntimeClassName = "uid-rc", ptr.To("gvisor")
	if r := e.sync(t, rc); r.Error() != nil || e.rs.handlers[1] != "runsc" {
		t.Fatalf("gvisor: %v, handlers %v", r.Error(), e.rs.handlers)
	}
	missing := basicPod()
	missing.UID, missing.Spec.RuntimeClassName = "uid-missing", ptr.To("kata")
	r = e.sync(t, missing)
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreatePodSandboxError || w.Message != `RuntimeClass "kata" not found` {
		t.Errorf("missing RuntimeClass: %+v", w)
	}
}

func TestPostStartHook(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(
		v1.Container{Name: "first", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/ready"}}}}},
	)
	pod.Spec.InitContainers = []v1.Container{{Name: "side", Image: "gokubelet.local/testimage:1.0", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
		Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"hook"}}}}}}
	r := e.sync(t, pod)
	if got := steps(r); got != "CreatePodSandbox StartInitContainer:side" {
		t.Fatalf("first sync: %s", got)
	}
	if r.RetryAfter() != SidecarStartedRetry {
		t.Errorf("a started sidecar must ask for the next round at once, RetryAfter %v", r.RetryAfter())
	}
	if got := e.rs.eventLog(); len(got) != 1 || got[0] != "exec:side:hook" {
		t.Errorf("sidecar hook: %v", got)
	}
	r = e.sync(t, pod)
	if got := steps(r); got != "StartContainer:first" || r.Error() != nil {
		t.Fatalf("second sync: %s %v", got, r.Error())
	}

	// A failing hook kills the container and is the waiting reason.
	e.rs.mu.Lock()
	e.rs.execErr = errors.New("hook exploded")
	e.rs.mu.Unlock()
	failing := basicPod(v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}})
	failing.UID = "uid-fail"
	r = e.sync(t, failing)
	w := r.WaitingReasons()["app"]
	if w.Reason != ReasonPostStartHookError || !strings.Contains(w.Message, `Exec lifecycle hook ([false]) for Container "app" in Pod "web_team(uid-fail)" failed - error: hook exploded`) {
		t.Errorf("waiting %+v", w)
	}
	log := e.rs.eventLog()
	if log[len(log)-1] != "stop:app" {
		t.Errorf("container not killed after its hook failed: %v", log)
	}
	ev := e.events()
	if !strings.Contains(ev, "Warning FailedPostStartHook PostStartHook failed") || !strings.Contains(ev, "Normal Killing FailedPostStartHook") {
		t.Errorf("events:\n%s", ev)
	}
	if strings.Contains(ev, "hook exploded") {
		t.Errorf("the hook's message must not go into events:\n%s", ev)
	}
}

func TestPreStopAndSidecarStopOrder(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(
		v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}},
		v1.Container{Name: "app2"},
	)
	sidecar := func(name string) v1.Container {
		return v1.Container{Name: name, Image: "gokubelet.local/testimage:1.0", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}
	}
	pod.Spec.InitContainers = []v1.Container{sidecar("s1"), sidecar("s2")}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	for i := 0; i < 4; i++ {
		e.sync(t, pod)
	}
	st, _ := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if n := len(st.Running()); n != 4 {
		t.Fatalf("%d running", n)
	}
	// app takes a while to stop: the sidecars must wait for it, s2 first.
	e.rs.mu.Lock()
	e.rs.stopDelay["app"] = 200 * time.Millisecond
	e.rs.mu.Unlock()
	if err := e.m.KillPod(context.Background(), pod, nil, nil); err != nil {
		t.Fatal(err)
	}
	log := e.rs.eventLog()
	idx := map[string]int{}
	for i, ev := range log {
		idx[ev] = i
	}
	if !(idx["exec:app:drain"] < idx["stop:app"]) {
		t.Errorf("preStop did not run before the stop: %v", log)
	}
	if !(idx["stop:app"] < idx["stop:s2"] && idx["stop:app2"] < idx["stop:s2"] && idx["stop:s2"] < idx["stop:s1"]) {
		t.Errorf("stop order %v: want app containers, then s2, then s1", log)
	}

	// A pod-less kill (the kubelet lost the pod) still runs preStop, from
	// the container's annotation.
	e2 := newPSEnv(t, nil)
	p2 := basicPod(v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"bye"}}}}})
	e2.sync(t, p2)
	st, _ = e2.m.GetPodStatus(context.Background(), p2.UID, p2.Name, p2.Namespace)
	if err := e2.m.KillPod(context.Background(), nil, runningFromStatus(st), nil); err != nil {
		t.Fatal(err)
	}
	if log := e2.rs.eventLog(); len(log) < 2 || log[0] != "exec:app:bye" {
		t.Errorf("orphan preStop: %v", log)
	}
}

// A preStop hook that outlives the grace period is waited for that long,
// then the container is stopped (with the minimum grace) while the hook
// still runs: the hook is not cut off by the kubelet, it ends with its
// container, as upstream's (node e2e: "should terminate sidecars
// simultaneously if prestop doesn't exit" times each hook's life at ~32 s).
func TestPreStopOutlivingTheGracePeriodEndsWithTheContainer(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"loop"}}}}})
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	e.sync(t, pod)
	e.rs.mu.Lock()
	e.rs.hangExec, e.rs.stopTimeouts = "app", map[string]int64{}
	e.rs.mu.Unlock()
	killed := make(chan error, 1)
	go func() { killed <- e.m.KillPod(context.Background(), pod, nil, nil) }()
	clk := e.m.clock.(*clocktesting.FakeClock)
	for !clk.HasWaiters() {
		select {
		case err := <-killed:
			t.Fatalf("KillPod returned before the grace period: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	clk.Step(30 * time.Second)
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.rs.mu.Lock()
		ends, stopGrace := append([]string(nil), e.rs.execEnds...), e.rs.stopTimeouts["app"]
		e.rs.mu.Unlock()
		if len(ends) > 0 {
			if ends[0] != "stopped (timeout 0s)" {
				t.Errorf("the hook's exec ended %q, want stopped with its container and no exec timeout", ends[0])
			}
			if stopGrace != minGracePeriod {
				t.Errorf("stop grace %d, want the minimum %d after the hook used the grace period", stopGrace, minGracePeriod)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook's exec never ended; events %v", e.rs.eventLog())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEphemeralContainers(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod()
	if r := e.sync(t, pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "gokubelet.local/testimage:1.0", ImagePullPolicy: v1.PullIfNotPresent},
		TargetContainerName:      "app",
	}}
	r := e.sync(t, pod)
	if got := steps(r); got != "StartContainer:debugger" {
		t.Fatalf("ephemeral start: %s (%v)", got, r.Error())
	}
	st, _ := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	ns := e.rs.config("debugger").Linux.SecurityContext.NamespaceOptions
	if ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != st.Latest("app").ID {
		t.Errorf("target PID namespace %+v", ns)
	}
	// It exits: never restarted, whatever the pod's policy.
	e.rs.Lock()
	for _, c := range e.rs.Containers {
		if c.Metadata.Name == "debugger" {
			c.State = runtimeapi.ContainerState_CONTAINER_EXITED
		}
	}
	e.rs.Unlock()
	if r := e.sync(t, pod); len(r.Steps) != 0 {
		t.Errorf("exited ephemeral container touched: %s", steps(r))
	}
}

func TestTerminationMessages(t *testing.T) {
	dir := t.TempDir()
	msgFile := filepath.Join(dir, "msg")
	logFile := filepath.Join(dir, "0.log")
	var logLines []string
	for i := 0; i < 100; i++ {
		logLines = append(logLines, "2024-01-01T00:00:00.000000000Z stdout F line "+strings.Repeat("x", i%3)+strconv.Itoa(i))
	}
	logLines = append(logLines, "2024-01-01T00:00:00.000000000Z stderr P part-", "2024-01-01T00:00:00.000000000Z stderr F end")
	os.WriteFile(logFile, []byte(strings.Join(logLines, "\n")+"\n"), 0o644)
	status := func(policy v1.TerminationMessagePolicy, exit int32, msg string) *runtimeapi.ContainerStatus {
		os.WriteFile(msgFile, []byte(msg), 0o644)
		return &runtimeapi.ContainerStatus{
			ExitCode: exit, LogPath: logFile,
			Annotations: map[string]string{AnnotationTerminationMessagePath: "/dev/termination-log", AnnotationTerminationMessagePolicy: string(policy)},
			Mounts:      []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}},
		}
	}
	if got := terminationMessage(status(v1.TerminationMessageReadFile, 1, "boom")); got != "boom" {
		t.Errorf("file: %q", got)
	}
	big := strings.Repeat("a", 100) + strings.Repeat("b", MaxTerminationMessageBytes)
	if got := terminationMessage(status(v1.TerminationMessageReadFile, 0, big)); got != strings.Repeat("b", MaxTerminationMessageBytes) {
		t.Errorf("a long message keeps its last 4096 bytes: %d bytes, starts %q", len(got), got[:5])
	}
	if got := terminationMessage(status(v1.TerminationMessageReadFile, 1, "")); got != "" {
		t.Errorf("File policy never reads logs: %q", got)
	}
	got := terminationMessage(status(v1.TerminationMessageFallbackToLogsOnError, 1, ""))
	if !strings.HasSuffix(got, "line xx98\nline 99\npart-end\n") || len(got) > MaxTerminationLogBytes || strings.Count(got, "\n") > MaxTerminationLogLines {
		t.Errorf("fallback to logs: %d bytes, %d lines, ends %q", len(got), strings.Count(got, "\n"), got[len(got)-30:])
	}
	if got := terminationMessage(status(v1.TerminationMessageFallbackToLogsOnError, 0, "")); got != "" {
		t.Errorf("success never reads logs: %q", got)
	}
	if got := terminationMessage(status(v1.TerminationMessageFallbackToLogsOnError, 0, "from-file")); got != "from-file" {
		t.Errorf("file wins on success: %q", got)
	}
	if got := terminationMessage(status(v1.TerminationMessageFallbackToLogsOnError, 2, "from-file")); got != "from-file" {
		t.Errorf("file wins on failure when not empty: %q", got)
	}
}
