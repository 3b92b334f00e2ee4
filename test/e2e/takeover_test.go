package e2e

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/staticpod"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/test/framework"
)

// TestTakeoverFromUpstreamAndBack is the drop-in promise: pods started by
// the upstream kubelet of the pinned version (hack/build-upstream.sh
// kubelet) keep running when it is stopped and this kubelet starts with the
// same configuration, flags and root directory, with no container
// restarted and every status still right; and the same when the node goes
// back to the upstream kubelet.
//
// Each kubelet shows it manages every pod before the checks: the test makes
// each pod's readiness probe fail (removing a file through the CRI) and
// waits for the API to show the pod not ready, then ready again. That takes
// a sync of the pod by the kubelet in charge, and a container it wanted to
// replace would have been replaced by then.
func TestTakeoverFromUpstreamAndBack(t *testing.T) {
	testTakeover(t, "GOKUBELET_UPSTREAM_KUBELET", false)
}

// TestTakeoverFromPreviousMinorAndBack is the same with the upstream
// kubelet of the previous minor (KUBE_PREVIOUS_VERSION in hack/versions.sh,
// 1.36): a node not yet upgraded to the release this kubelet follows is
// taken over, and handed back to the kubelet it ran.
//
// One thing differs, for upstream as here: a static pod's UID is a hash of
// upstream's internal pod type, which gains fields from one minor to the
// next, so a static pod started by 1.36 has another UID under 1.37 (this
// kubelet's rule is 1.37.2's: TestStaticPodUIDMatchesUpstream) and is
// recreated once, as upstream 1.37 recreates it; handed back, 1.36
// recreates it under its own UID. The test expects exactly that of a
// static pod whose UID rule differs, and holds it to no restart if the
// rules agree. Every API pod keeps its containers.
func TestTakeoverFromPreviousMinorAndBack(t *testing.T) {
	testTakeover(t, "GOKUBELET_UPSTREAM_KUBELET_PREVIOUS", true)
}

// testTakeover runs the takeover there and back with the upstream kubelet
// binary the environment variable names; previousMinor: that kubelet's
// static-pod UIDs may differ from this kubelet's (see above).
func testTakeover(t *testing.T, binEnv string, previousMinor bool) {
	tn := startTakeoverNode(t, binEnv)
	upstream, ours, static := tn.upstream, tn.ours, tn.static

	// 1. The upstream kubelet runs the pods.
	t.Log("takeover: starting the upstream kubelet")
	tn.switchTo(t, upstream)
	nodeName := clusterEnv["NODE_NAME"]

	ns := namespace(t)
	pods := takeoverPods()
	for _, p := range pods {
		if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(static, "static-web.yaml"), []byte(staticTakeoverManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range pods {
		names = append(names, ns+"/"+p.Name)
	}
	staticName := "kube-system/static-web-" + strings.ToLower(nodeName)
	names = append(names, staticName)
	for _, n := range names {
		waitTakeoverPod(t, n, "running and ready under the upstream kubelet", func(p *v1.Pod) bool {
			if !running(p) {
				return false
			}
			// "restarted" has crashed once on purpose: wait until that shows.
			if strings.HasSuffix(n, "/restarted") {
				return p.Status.ContainerStatuses[0].RestartCount == 1
			}
			return true
		})
	}
	before := snapshotPods(t, names)
	// The static pod's UID under each kubelet: this kubelet's rule, and
	// the upstream kubelet's as it ran it.
	staticPath := filepath.Join(static, "static-web.yaml")
	parsed, err := staticpod.Parse([]byte(staticTakeoverManifest), podspec.SourceFile, staticPath, nodeName)
	if err != nil {
		t.Fatal(err)
	}
	staticUID := map[*framework.Kubelet]string{ours: string(parsed[0].UID), upstream: before[staticName].UID}
	if !previousMinor && staticUID[ours] != staticUID[upstream] {
		t.Errorf("the static pod's UID under upstream %s differs from this kubelet's %s for the same release", staticUID[upstream], staticUID[ours])
	}

	// 2. This kubelet takes over.
	for _, step := range []struct {
		from, to         *framework.Kubelet
		fromName, toName string
	}{
		{upstream, ours, "upstream", "this kubelet"},
		{ours, upstream, "this kubelet", "upstream"},
	} {
		t.Logf("takeover: stopping %s, starting %s", step.fromName, step.toName)
		tn.switchTo(t, step.to)
		if want := staticUID[step.to]; want != before[staticName].UID {
			// Only across minors (checked above): the static pod is
			// recreated under the new kubelet's UID, once.
			t.Logf("%s: UID %s under %s, %s under %s: recreated, as upstream does across these releases", staticName, before[staticName].UID, step.fromName, want, step.toName)
			waitTakeoverPod(t, staticName, "recreated under UID "+want, func(p *v1.Pod) bool {
				return running(p) && p.Annotations["kubernetes.io/config.mirror"] == want
			})
			delete(before, staticName)
		}
		for _, n := range names {
			flipReadiness(t, n, step.toName)
		}
		after := snapshotPods(t, names)
		restarts := compareSnapshots(t, step.toName, before, after)
		t.Logf("takeover to %s: %d pods, %d containers, %d restarted", step.toName, len(names), countContainers(before), restarts)
		if restarts > 0 {
			t.Fatalf("%d containers restarted when %s took over", restarts, step.toName)
		}
		if step.to != ours {
			continue
		}
		// Pods this kubelet creates (one crashing once, so its restart
		// count is written by this kubelet; one static) must survive the
		// way back too.
		extra := takeoverPods()[3].DeepCopy()
		extra.Name = "by-ours"
		if _, err := client.CoreV1().Pods(ns).Create(context.Background(), extra, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		added := []string{ns + "/by-ours"}
		if !previousMinor {
			// Across minors a second static pod would be recreated on the
			// way back under a UID the test cannot know in advance.
			manifest := strings.Replace(staticTakeoverManifest, "name: static-web", "name: static-ours", 1)
			if err := os.WriteFile(filepath.Join(static, "static-ours.yaml"), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			added = append(added, "kube-system/static-ours-"+strings.ToLower(nodeName))
		}
		for _, n := range added {
			waitTakeoverPod(t, n, "running and ready under this kubelet", func(p *v1.Pod) bool {
				if !running(p) {
					return false
				}
				if strings.HasSuffix(n, "/by-ours") {
					return p.Status.ContainerStatuses[0].RestartCount == 1
				}
				return true
			})
		}
		names = append(names, added...)
		before = snapshotPods(t, names)
	}
}

// takeoverNode is the test node run by one kubelet at a time, the
// upstream one or this one, with one configuration, one set of flags and
// one root directory: what a takeover and a hand-back are.
type takeoverNode struct {
	// static is the static pod directory, root the --root-dir.
	static, root string
	upstream     *framework.Kubelet
	ours         *framework.Kubelet
	// current is the kubelet in charge (nil: none yet).
	current *framework.Kubelet
}

// startTakeoverNode stops the shared kubelet (it owns the node identity;
// it is started again at the end if it was running: tests run one at a
// time) and prepares both kubelets with the upstream kubelet binary the
// environment variable names. Neither runs yet: see switchTo.
func startTakeoverNode(t *testing.T, binEnv string) *takeoverNode {
	t.Helper()
	upstreamBin := os.Getenv(binEnv)
	if upstreamBin == "" {
		// hack/test.sh builds it (cached) and sets the variable.
		t.Fatal(binEnv + " is not set: run through make test (hack/test.sh builds the upstream kubelets)")
	}
	version, err := osexec.Command(upstreamBin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", upstreamBin, err)
	}
	t.Logf("takeover from and back to %s", strings.TrimSpace(string(version)))
	// The shared kubelet owns the node identity: stop it for this test and
	// start it again afterwards if it was running (tests run one at a time).
	started := true
	kubeletOnce.Do(func() { started = false })
	if started {
		if err := kubelet.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if started {
			kubelet.Start(t)
		} else {
			kubeletOnce = sync.Once{}
		}
	})

	dir := t.TempDir()
	t.Cleanup(func() { hostfs.UnmountAll(dir) })
	static := filepath.Join(dir, "static")
	root := filepath.Join(dir, "root")
	for _, d := range []string{static, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	healthz, err := framework.FreeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	port, err := framework.FreeTCPPort()
	if err != nil {
		t.Fatal(err)
	}
	// One configuration for both kubelets, with what the upstream kubelet
	// needs on these machines (see docs/benchmarks.md).
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
podLogsDir: %s
clusterDomain: cluster.local
clusterDNS: [%q]
resolvConf: /etc/resolv.conf
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
`, static, framework.CRIEndpoint(), port, healthz, filepath.Join(dir, "pod-logs"), clusterDNS,
		clusterEnv["KUBELET_TLS_CERT_FILE"], clusterEnv["KUBELET_TLS_KEY_FILE"], clusterEnv["CLUSTER_CA_FILE"])
	// The tests' disk settings, as every other kubelet the tests start:
	// with upstream's percentages the upstream kubelet reads these disks as
	// under DiskPressure, evicts the pods and deletes the local images.
	disk, err := framework.DiskConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg += disk
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfgPath, "--root-dir", root, "--cert-dir", filepath.Join(root, "pki"),
		"--kubeconfig", clusterEnv["NODE_KUBECONFIG"], "--hostname-override", clusterEnv["NODE_NAME"],
		"--node-ip", clusterEnv["NODE_IP"], "-v", "2"}
	tn := &takeoverNode{static: static, root: root,
		upstream: &framework.Kubelet{Bin: upstreamBin, Args: args, HealthzPort: healthz},
		ours:     &framework.Kubelet{Bin: kubeletBin, Args: args, HealthzPort: healthz}}
	t.Cleanup(func() {
		if tn.current != nil {
			framework.LogOnFailure(t, "kubelet-in-charge", tn.current.Log())
			_ = tn.current.Signal(syscall.SIGTERM)
		}
	})
	return tn
}

// switchTo stops the kubelet in charge (SIGTERM, as an operator's
// systemctl stop), starts k and waits for the node to be Ready.
func (tn *takeoverNode) switchTo(t *testing.T, k *framework.Kubelet) {
	t.Helper()
	if tn.current != nil {
		if err := tn.current.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	tn.current = k
	k.Start(t)
	waitNodeReady(t, clusterEnv["NODE_NAME"], framework.WaitLimit)
}

// takeoverPods are API pods with what adoption must get right: several
// containers, an init container, a sidecar, volumes (emptyDir, configMap
// through the projected service account token too), a restart count
// above zero.
func takeoverPods() []*v1.Pod {
	c := probedContainer
	grace := ptr.To[int64](2)
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"app": "plain"}},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace, Containers: []v1.Container{c("main")}}}

	multi := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "multi"},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace,
			InitContainers: []v1.Container{{Name: "init", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", "echo set > /work/init"}, VolumeMounts: []v1.VolumeMount{{Name: "work", MountPath: "/work"}}}},
			Containers: []v1.Container{c("a"), c("b")},
			Volumes:    []v1.Volume{{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	multi.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "work", MountPath: "/work"}}
	multi.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}

	sidecar := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sidecar"},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace,
			InitContainers: []v1.Container{c("side")},
			Containers:     []v1.Container{c("main")}}}
	sidecar.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)

	// Crashes once (the emptyDir remembers), then runs: restart count 1.
	restarted := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "restarted"},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace,
			Containers: []v1.Container{c("main")},
			Volumes:    []v1.Volume{{Name: "state", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}}}
	restarted.Spec.Containers[0].Command = []string{"sh", "-c", "if [ ! -f /state/ran ]; then touch /state/ran; exit 3; fi; touch /tmp/ready; exec sleep 86400"}
	restarted.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "state", MountPath: "/state"}}
	return []*v1.Pod{plain, multi, sidecar, restarted}
}

// probedContainer runs forever and is ready while its /tmp/ready exists
// (flipReadiness removes and restores it).
func probedContainer(name string) v1.Container {
	probe := &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	ready := []string{"sh", "-c", "touch /tmp/ready && exec sleep 86400"}
	return v1.Container{Name: name, Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, Command: ready, ReadinessProbe: probe}
}

const staticTakeoverManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: kube-system
  labels: {app: static-web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "touch /tmp/ready && exec sleep 86400"]
    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
      failureThreshold: 1
    resources:
      limits: {cpu: 100m, memory: 32Mi}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
  volumes:
  - name: scratch
    emptyDir: {}
`

func getPod(t *testing.T, key string) (*v1.Pod, error) {
	ns, name, _ := strings.Cut(key, "/")
	return client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func waitTakeoverPod(t *testing.T, key, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	framework.Eventually(t, key+" "+what, func() (bool, string) {
		p, err := getPod(t, key)
		if err != nil {
			return false, err.Error()
		}
		last = p
		return cond(p), fmt.Sprintf("phase=%s %v %v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return last
}

// flipReadiness makes every probed container of the pod unready (its
// /tmp/ready file removed through the CRI), waits until the API shows the
// pod not ready, restores the file and waits for ready again.
func flipReadiness(t *testing.T, key, who string) {
	t.Helper()
	p, err := getPod(t, key)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.State.Running != nil && s.ContainerID != "" {
			ids = append(ids, strings.TrimPrefix(s.ContainerID, "containerd://"))
		}
	}
	// Only containers that write /tmp/ready have the probe; the others'
	// exec fails harmlessly.
	exec := func(cmd ...string) {
		for _, id := range ids {
			_, _, _ = runtimeSvc.ExecSync(context.Background(), id, cmd, 10*time.Second)
		}
	}
	exec("rm", "-f", "/tmp/ready")
	waitTakeoverPod(t, key, "not ready under "+who, func(p *v1.Pod) bool { return !podReady(p) })
	exec("touch", "/tmp/ready")
	waitTakeoverPod(t, key, "ready again under "+who, func(p *v1.Pod) bool { return running(p) && podReady(p) })
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podSnapshot is what must not change across a takeover.
type podSnapshot struct {
	UID        string
	PodIP      string
	Phase      v1.PodPhase
	Containers map[string]containerSnapshot // by name, init containers prefixed "init:"
	// Runtime lists the IDs of every CRI container of the pod (running or
	// exited).
	Runtime []string
}

type containerSnapshot struct {
	ID           string
	RestartCount int32
	StartedAt    string
	State        string
	ExitCode     int32
}

func snapshotPods(t *testing.T, keys []string) map[string]podSnapshot {
	t.Helper()
	out := map[string]podSnapshot{}
	ctrs, err := runtimeSvc.ListContainers(context.Background(), &runtimeapi.ContainerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		p, err := getPod(t, k)
		if err != nil {
			t.Fatal(err)
		}
		uid := string(p.UID)
		if src := p.Annotations["kubernetes.io/config.mirror"]; src != "" {
			uid = src // a mirror pod: the static pod's UID
		}
		s := podSnapshot{UID: uid, PodIP: p.Status.PodIP, Phase: p.Status.Phase, Containers: map[string]containerSnapshot{}}
		add := func(prefix string, list []v1.ContainerStatus) {
			for _, c := range list {
				cs := containerSnapshot{ID: c.ContainerID, RestartCount: c.RestartCount}
				switch {
				case c.State.Running != nil:
					cs.State, cs.StartedAt = "running", c.State.Running.StartedAt.UTC().Format(time.RFC3339)
				case c.State.Terminated != nil:
					cs.State, cs.ExitCode = "terminated/"+c.State.Terminated.Reason, c.State.Terminated.ExitCode
					cs.StartedAt = c.State.Terminated.StartedAt.UTC().Format(time.RFC3339)
				default:
					cs.State = "waiting"
				}
				s.Containers[prefix+c.Name] = cs
			}
		}
		add("init:", p.Status.InitContainerStatuses)
		add("", p.Status.ContainerStatuses)
		for _, c := range ctrs {
			if c.Labels["io.kubernetes.pod.uid"] == uid {
				s.Runtime = append(s.Runtime, c.Id)
			}
		}
		sort.Strings(s.Runtime)
		out[k] = s
	}
	return out
}

// compareSnapshots reports every difference and returns how many
// containers were restarted (a new ID or a higher restart count).
func compareSnapshots(t *testing.T, who string, before, after map[string]podSnapshot) int {
	t.Helper()
	restarts := 0
	for k, b := range before {
		a := after[k]
		if a.UID != b.UID || a.PodIP != b.PodIP || a.Phase != b.Phase {
			t.Errorf("%s under %s: uid/ip/phase %s %s %s, was %s %s %s", k, who, a.UID, a.PodIP, a.Phase, b.UID, b.PodIP, b.Phase)
		}
		for name, bc := range b.Containers {
			ac, ok := a.Containers[name]
			switch {
			case !ok:
				t.Errorf("%s under %s: container %s has no status", k, who, name)
			case ac.ID != bc.ID || ac.RestartCount != bc.RestartCount:
				restarts++
				t.Errorf("%s under %s: container %s restarted: %+v, was %+v", k, who, name, ac, bc)
			case ac != bc:
				t.Errorf("%s under %s: container %s status changed: %+v, was %+v", k, who, name, ac, bc)
			}
		}
		if fmt.Sprint(a.Runtime) != fmt.Sprint(b.Runtime) {
			t.Errorf("%s under %s: runtime containers %v, were %v", k, who, a.Runtime, b.Runtime)
		}
	}
	return restarts
}

func countContainers(s map[string]podSnapshot) int {
	n := 0
	for _, p := range s {
		n += len(p.Containers)
	}
	return n
}
