package e2e

// End-to-end tests of the whole pod spec: what containers actually see of
// their environment, DNS, hosts file, identity and privileges, and how
// hooks, sidecars, ephemeral containers and termination messages behave.
// Containers report what they saw through their termination message (or a
// readiness probe that checks it), since the kubelet's exec/logs API is
// not there yet.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

const pauseImage = "registry.k8s.io/pause:3.10.2"

// shPod is a pod whose one container "main" runs script with sh and exits;
// it never restarts.
func shPod(name, script string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "hello"}},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}}},
		},
	}
}

func create(t *testing.T, ns string, p *v1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
}

func finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// runToEnd creates the pod, waits for it to finish and returns it; it
// fails the test unless it Succeeded.
func runToEnd(t *testing.T, ns string, p *v1.Pod) *v1.Pod {
	t.Helper()
	create(t, ns, p)
	got := waitPod(t, ns, p.Name, "finished", finished)
	if got.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod %s %s: %s %s; containers %+v", p.Name, got.Status.Phase, got.Status.Reason, got.Status.Message, got.Status.ContainerStatuses)
	}
	return got
}

func terminated(st []v1.ContainerStatus, name string) *v1.ContainerStateTerminated {
	for _, s := range st {
		if s.Name == name {
			return s.State.Terminated
		}
	}
	return nil
}

// message is what container main wrote to its termination message.
func message(t *testing.T, p *v1.Pod) string {
	t.Helper()
	term := terminated(p.Status.ContainerStatuses, "main")
	if term == nil {
		t.Fatalf("container main of %s not terminated: %+v", p.Name, p.Status.ContainerStatuses)
	}
	return term.Message
}

// lines turns "K=V" lines into a map.
func lines(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// waitWaiting waits until container c of the pod waits with reason and
// returns its message.
func waitWaiting(t *testing.T, ns, name, c, reason string) string {
	t.Helper()
	var msg string
	waitPod(t, ns, name, c+" waiting with "+reason, func(p *v1.Pod) bool {
		for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, s := range list {
				if s.Name == c && s.State.Waiting != nil && s.State.Waiting.Reason == reason {
					msg = s.State.Waiting.Message
					return true
				}
			}
		}
		return false
	})
	return msg
}

func waitFailedWith(t *testing.T, ns, name, reason string) *v1.Pod {
	t.Helper()
	return waitPod(t, ns, name, "Failed with "+reason, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == reason
	})
}

func nodeObj(t *testing.T) *v1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), clusterEnv["NODE_NAME"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPodSpecEnvironment(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		StringData: map[string]string{"PASSWORD": "hunter2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services(ns).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "backend-db"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []v1.ServicePort{{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432)}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet learns of the Service through its own watch, which may
	// lag the pod's (upstream's too): a container gets the variables of
	// the Services the kubelet knows when it starts. A barrier pod that
	// restarts until it sees the Service's variables makes the next pod's
	// environment deterministic (it failed once on a loaded machine,
	// 2026-11-28, with every BACKEND_DB_* variable missing).
	seen := shPod("svc-seen", `[ -n "$BACKEND_DB_SERVICE_HOST" ]`)
	seen.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	runToEnd(t, ns, seen)

	ref := func(kind, name, key string, optional bool) *v1.EnvVarSource {
		sel := v1.LocalObjectReference{Name: name}
		if kind == "cm" {
			return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: sel, Key: key, Optional: ptr.To(optional)}}
		}
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: sel, Key: key, Optional: ptr.To(optional)}}
	}
	field := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
	}
	res := func(r, divisor string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: r, Divisor: resource.MustParse(divisor)}}
	}
	p := shPod("env", `printf '%s\n' 'cmd=$(MODE)' 'esc=$$(MODE)' 'unknown=$(NOPE)' > /dev/termination-log; env >> /dev/termination-log`)
	c := &p.Spec.Containers[0]
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	c.EnvFrom = []v1.EnvFromSource{
		{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
		{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
		{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nosuch"}, Optional: ptr.To(true)}},
	}
	c.Env = []v1.EnvVar{
		{Name: "MODE", ValueFrom: ref("cm", "cfg", "MODE", false)},
		{Name: "PASSWORD", ValueFrom: ref("secret", "sec", "PASSWORD", false)},
		{Name: "OPTIONAL", ValueFrom: ref("cm", "cfg", "nokey", true)},
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "POD_UID", ValueFrom: field("metadata.uid")},
		{Name: "POD_LABEL", ValueFrom: field("metadata.labels['app']")},
		{Name: "POD_NOTE", ValueFrom: field("metadata.annotations['note']")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
		{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
		{Name: "MEM_MI", ValueFrom: res("limits.memory", "1Mi")},
		{Name: "CPU_LIMIT_M", ValueFrom: res("limits.cpu", "1m")},
		{Name: "ADDR", Value: "$(POD_NAME).$(POD_NAMESPACE):$(BACKEND_DB_SERVICE_PORT)"},
	}
	done := runToEnd(t, ns, p)
	msg := message(t, done)
	env := lines(msg)
	n := nodeObj(t)
	want := map[string]string{
		"cmd": "fast", "esc": "$(MODE)", "unknown": "$(NOPE)",
		"CFG_MODE": "fast", "CFG_LEVEL": "3", "S_PASSWORD": "hunter2", "MODE": "fast", "PASSWORD": "hunter2",
		"POD_NAME": "env", "POD_NAMESPACE": ns, "POD_UID": string(done.UID), "POD_LABEL": "env", "POD_NOTE": "hello",
		"NODE": n.Name, "SA": "default", "HOST_IP": clusterEnv["NODE_IP"], "POD_IP": done.Status.PodIP, "POD_IPS": done.Status.PodIP,
		"MEM_MI": "64", "CPU_LIMIT_M": fmt.Sprint(n.Status.Allocatable.Cpu().MilliValue()),
		"ADDR":                           "env." + ns + ":5432",
		"KUBERNETES_SERVICE_HOST":        kube.Spec.ClusterIP,
		"KUBERNETES_SERVICE_PORT":        "443",
		"KUBERNETES_SERVICE_PORT_HTTPS":  "443",
		"KUBERNETES_PORT":                "tcp://" + kube.Spec.ClusterIP + ":443",
		"BACKEND_DB_SERVICE_HOST":        svc.Spec.ClusterIP,
		"BACKEND_DB_SERVICE_PORT_SQL":    "5432",
		"BACKEND_DB_PORT_5432_TCP_ADDR":  svc.Spec.ClusterIP,
		"BACKEND_DB_PORT_5432_TCP_PROTO": "tcp",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["OPTIONAL"]; ok {
		t.Errorf("an optional missing key must leave the variable out")
	}
	if t.Failed() {
		t.Logf("the container saw:\n%s", msg)
	}

	// Without service links, only the master service's variables.
	nolinks := shPod("nolinks", `env > /dev/termination-log`)
	nolinks.Spec.EnableServiceLinks = ptr.To(false)
	env = lines(message(t, runToEnd(t, ns, nolinks)))
	if env["KUBERNETES_SERVICE_HOST"] != kube.Spec.ClusterIP || env["BACKEND_DB_SERVICE_HOST"] != "" {
		t.Errorf("enableServiceLinks=false: KUBERNETES_SERVICE_HOST=%q BACKEND_DB_SERVICE_HOST=%q", env["KUBERNETES_SERVICE_HOST"], env["BACKEND_DB_SERVICE_HOST"])
	}

	// A missing required key: the container waits, naming the key.
	missing := shPod("missing", "true")
	missing.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: ref("cm", "cfg", "nokey", false)}}
	create(t, ns, missing)
	if got := waitWaiting(t, ns, "missing", "main", "CreateContainerConfigError"); got != "couldn't find key nokey in ConfigMap "+ns+"/cfg" {
		t.Errorf("waiting message %q", got)
	}
	// A missing required Secret.
	nosecret := shPod("nosecret", "true")
	nosecret.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}}}}
	create(t, ns, nosecret)
	if got := waitWaiting(t, ns, "nosecret", "main", "CreateContainerConfigError"); !strings.Contains(got, `secret "gone" not found`) {
		t.Errorf("waiting message %q", got)
	}
}

func TestPodSpecDNSAndHosts(t *testing.T) {
	node(t)
	ns := namespace(t)
	script := `{ cat /etc/resolv.conf; echo "hostname=$(hostname)"; cat /etc/hosts; } > /dev/termination-log`

	cf := shPod("cf", script)
	cf.Spec.Hostname, cf.Spec.Subdomain, cf.Spec.SetHostnameAsFQDN = "box", "sub", ptr.To(true)
	cf.Spec.HostAliases = []v1.HostAlias{{IP: "203.0.113.7", Hostnames: []string{"foo.example", "bar.example"}}}
	cf.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"extra.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}}
	got := runToEnd(t, ns, cf)
	msg := message(t, got)
	fqdn := "box.sub." + ns + ".svc.cluster.local"
	for _, want := range []string{
		"nameserver " + clusterDNS + "\n",
		"search " + ns + ".svc.cluster.local svc.cluster.local cluster.local",
		"extra.example\n",
		"options ndots:2 edns0\n",
		"hostname=" + fqdn + "\n",
		"# Kubernetes-managed hosts file.\n",
		got.Status.PodIP + "\t" + fqdn + "\tbox\n",
		"# Entries added by HostAliases.\n203.0.113.7\tfoo.example\tbar.example\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("ClusterFirst pod: %q missing from:\n%s", want, msg)
		}
	}

	none := shPod("none", `cat /etc/resolv.conf > /dev/termination-log`)
	none.Spec.DNSPolicy = v1.DNSNone
	none.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"203.0.113.53"}, Searches: []string{"only.example"}}
	if msg := message(t, runToEnd(t, ns, none)); !strings.Contains(msg, "nameserver 203.0.113.53\n") || !strings.Contains(msg, "search only.example\n") || strings.Contains(msg, clusterDNS) {
		t.Errorf("None:\n%s", msg)
	}

	host, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	def := shPod("default", `cat /etc/resolv.conf > /dev/termination-log`)
	def.Spec.DNSPolicy = v1.DNSDefault
	msg = message(t, runToEnd(t, ns, def))
	for _, l := range strings.Split(string(host), "\n") {
		if strings.HasPrefix(l, "nameserver ") && !strings.Contains(msg, l) {
			t.Errorf("Default: host line %q missing from:\n%s", l, msg)
		}
	}
	if strings.Contains(msg, clusterDNS) {
		t.Errorf("Default policy got the cluster DNS:\n%s", msg)
	}

	// Host network: the node's hostname and hosts file, host DNS for
	// ClusterFirst.
	hn := shPod("hostnet", script)
	hn.Spec.HostNetwork = true
	hn.Spec.HostAliases = []v1.HostAlias{{IP: "203.0.113.8", Hostnames: []string{"hn.example"}}}
	msg = message(t, runToEnd(t, ns, hn))
	osHost, _ := os.Hostname()
	if !strings.Contains(msg, "hostname="+osHost+"\n") || !strings.Contains(msg, "# Kubernetes-managed hosts file (host network).\n") ||
		!strings.Contains(msg, "203.0.113.8\thn.example") || strings.Contains(msg, "nameserver "+clusterDNS) {
		t.Errorf("host network pod saw:\n%s", msg)
	}

	// A container that mounts its own /etc/hosts keeps it.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("10.9.9.9 mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := shPod("ownhosts", `cat /etc/hosts > /dev/termination-log`)
	own.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(dir, "hosts")}}}}
	own.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}
	if msg := message(t, runToEnd(t, ns, own)); msg != "10.9.9.9 mine\n" {
		t.Errorf("own /etc/hosts replaced:\n%s", msg)
	}
}

func TestPodSpecSecurity(t *testing.T) {
	nodeName := node(t)
	ns := namespace(t)
	status := `grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status`

	ids := shPod("ids", `{ echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"; `+status+`; if touch /probe 2>/dev/null; then echo rootfs=rw; else echo rootfs=ro; fi; echo "shm=$(cat /proc/sys/kernel/shm_rmid_forced) msgmax=$(cat /proc/sys/kernel/msgmax)"; cat /proc/1/cmdline | tr '\0' ' '; echo; } > /dev/termination-log`)
	ids.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		Sysctls:        []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel/msgmax", Value: "12345"}},
	}
	ids.Spec.ShareProcessNamespace = ptr.To(true)
	ids.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true)}
	msg := message(t, runToEnd(t, ns, ids))
	for _, want := range []string{"uid=1000 gid=3000 ", "CapEff:\t0000000000000000\n", "NoNewPrivs:\t1\n", "Seccomp:\t2\n", "rootfs=ro\n", "shm=1 msgmax=12345\n", "/pause"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q missing from what the container saw:\n%s", want, msg)
		}
	}
	if m := regexp.MustCompile(`groups=([0-9 ]+)`).FindStringSubmatch(msg); m == nil || !sameSet(strings.Fields(m[1]), []string{"3000", "2000", "4000"}) {
		t.Errorf("groups: %v in\n%s", m, msg)
	}

	caps := shPod("caps", status+` > /dev/termination-log`)
	caps.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_ADMIN"}}}
	if msg := message(t, runToEnd(t, ns, caps)); !strings.Contains(msg, "CapEff:\t0000000000001000\n") || !strings.Contains(msg, "NoNewPrivs:\t0\n") || !strings.Contains(msg, "Seccomp:\t0\n") {
		t.Errorf("root with only NET_ADMIN saw:\n%s", msg)
	}

	priv := shPod("priv", `{ `+status+`; ls /dev | wc -l; } > /dev/termination-log`)
	priv.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	priv.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}
	msg = message(t, runToEnd(t, ns, priv))
	// Privileged: every capability the node has (its bounding set).
	hostStatus, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	bnd := regexp.MustCompile(`CapBnd:\s*([0-9a-f]+)`).FindSubmatch(hostStatus)
	if bnd == nil || !strings.Contains(msg, "CapEff:\t"+string(bnd[1])+"\n") || !strings.Contains(msg, "Seccomp:\t0\n") {
		t.Errorf("privileged container saw (host bounding set %s):\n%s", bnd, msg)
	}

	// Host namespaces: the test runs on the node, so it can compare.
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	hostPID, _ := os.Readlink("/proc/self/ns/pid")
	hostns := shPod("hostns", `{ echo "ipc=$(readlink /proc/self/ns/ipc)"; echo "pid=$(readlink /proc/self/ns/pid)"; } > /dev/termination-log`)
	hostns.Spec.HostIPC, hostns.Spec.HostPID = true, true
	env := lines(message(t, runToEnd(t, ns, hostns)))
	if env["ipc"] != hostIPC || env["pid"] != hostPID {
		t.Errorf("hostIPC/hostPID: container %v, host ipc=%s pid=%s", env, hostIPC, hostPID)
	}
	own := shPod("ownns", `echo "ipc=$(readlink /proc/self/ns/ipc)" > /dev/termination-log`)
	if env := lines(message(t, runToEnd(t, ns, own))); env["ipc"] == hostIPC {
		t.Errorf("a pod without hostIPC shares the host's IPC namespace")
	}

	// runAsNonRoot: a root image is refused with a clear reason; an image
	// that names a non-root user runs.
	root := testPod("root")
	root.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	create(t, ns, root)
	if got := waitWaiting(t, ns, "root", "main", "CreateContainerConfigError"); !strings.Contains(got, "container has runAsNonRoot and image will run as root") {
		t.Errorf("runAsNonRoot message %q", got)
	}
	nonroot := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nonroot"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
		Containers:      []v1.Container{{Name: "main", Image: pauseImage, ImagePullPolicy: v1.PullIfNotPresent}}}}
	create(t, ns, nonroot)
	waitPod(t, ns, "nonroot", "Running", running)

	// Node-security admission: upstream's reasons.
	for _, tc := range []struct {
		name, reason string
		set          func(p *v1.Pod)
	}{
		{"unsafe-sysctl", "SysctlForbidden", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.sem", Value: "250 32000 32 128"}}}
		}},
		{"apparmor", "AppArmor", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}},
	} {
		p := testPod(tc.name)
		tc.set(p)
		create(t, ns, p)
		got := waitFailedWith(t, ns, tc.name, tc.reason)
		if got.Status.Message == "" {
			t.Errorf("%s: no message", tc.name)
		}
	}

	// supplementalGroupsPolicy: Strict runs where the node reports that
	// the runtime applies it (status.features: containerd 2), and the
	// container's identity is in its status; elsewhere (containerd 1.6)
	// it is refused with upstream's reason.
	strict := testPod("strict-groups")
	strict.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), SupplementalGroups: []int64{4000},
		SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict),
	}
	create(t, ns, strict)
	n, err := client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := n.Status.Features; f != nil && f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy {
		got := waitPod(t, ns, "strict-groups", "Running with Strict groups", running)
		u := got.Status.ContainerStatuses[0].User
		if u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 || !sameSet(int64s(u.Linux.SupplementalGroups), []string{"3000", "4000"}) {
			t.Errorf("strict-groups: status user %+v, want uid 1000 gid 3000 groups [3000 4000]", u)
		}
	} else {
		waitFailedWith(t, ns, "strict-groups", "SupplementalGroupsPolicyNotSupported")
	}

	// User namespaces: containerd 1.6 has none, and containerd 2's need ID
	// mappings this kubelet does not allocate; either way the pod says so.
	userns := testPod("userns")
	userns.Spec.HostUsers = ptr.To(false)
	create(t, ns, userns)
	if got := waitWaiting(t, ns, "userns", "main", "CreatePodSandboxError"); !strings.Contains(got, "can't set `spec.hostUsers: false`") {
		t.Errorf("hostUsers message %q", got)
	}
}

func int64s(v []int64) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprint(x)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = append([]string{}, a...), append([]string{}, b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// hostDir is a directory on the node the test reads, mounted into pods.
func hostDir(t *testing.T) (string, v1.Volume) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}}
}

func TestPodSpecLifecycleHooks(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	dir, vol := hostDir(t)
	mount := []v1.VolumeMount{{Name: "host", MountPath: "/host"}}

	// postStart: the next container starts only once it finished; an
	// httpGet hook reaches another pod (whose server exits with the code
	// the path names, so the hook is seen in that pod's status).
	server := testPod("server")
	create(t, ns, server)
	srv := waitPod(t, ns, "server", "Running", running)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](20),
		Volumes:                       []v1.Volume{vol},
		Containers: []v1.Container{
			{Name: "first", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
				Lifecycle: &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "sleep 2; echo done > /host/poststart"}}},
					PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo stopping > /host/prestop"}}},
				}},
			{Name: "second", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
				Command: []string{"sh", "-c", "cat /host/poststart > /host/second-saw 2>&1; exec /testserver --http-port=8081"},
				Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
					Host: srv.Status.PodIP, Port: intstr.FromInt32(8080), Path: "/exit/7"}}}},
		},
	}}
	create(t, ns, p)
	waitPod(t, ns, "hooks", "Running", running)
	if b, _ := os.ReadFile(filepath.Join(dir, "second-saw")); string(b) != "done\n" {
		t.Errorf("the second container started before the first one's postStart finished: it saw %q", b)
	}
	waitPod(t, ns, "server", "restarted by the httpGet hook", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.ExitCode == 7
	})
	if err := client.CoreV1().Pods(ns).Delete(ctx, "hooks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "hooks")
	if b, _ := os.ReadFile(filepath.Join(dir, "prestop")); string(b) != "stopping\n" {
		t.Errorf("preStop hook did not run: %q", b)
	}

	// A failing postStart kills the container (the server exits on the
	// SIGTERM): FailedPostStartHook.
	bad := testPod("badhook")
	bad.Spec.RestartPolicy = v1.RestartPolicyNever
	bad.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "exit 3"}}}}
	create(t, ns, bad)
	waitPod(t, ns, "badhook", "finished: its container was killed", finished)
	framework.Eventually(t, "FailedPostStartHook event", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=badhook"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			seen = append(seen, e.Reason)
			if e.Reason == "FailedPostStartHook" {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

func TestPodSpecSidecars(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	dir, vol := hostDir(t)
	mount := []v1.VolumeMount{{Name: "host", MountPath: "/host"}}
	sidecar := func(name, script string) v1.Container {
		return v1.Container{Name: name, Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
			RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Command: []string{"sh", "-c", script}}
	}
	// A sidecar that becomes ready after 3 s (its startup probe), a regular
	// init container that records whether it was, another sidecar, and the
	// app. On deletion each records when it got SIGTERM: the app first,
	// then the sidecars in reverse order.
	onTerm := func(name string) string {
		return "trap 'echo " + name + " >> /host/order; exit 0' TERM; "
	}
	slow := sidecar("slow", onTerm("slow")+"sleep 3; touch /tmp/ready; while true; do sleep 1; done")
	slow.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}}, PeriodSeconds: 1, FailureThreshold: 30}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sidecars"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		Volumes:                       []v1.Volume{vol},
		InitContainers: []v1.Container{
			slow,
			{Name: "check", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
				Command: []string{"sh", "-c", "date +%s > /host/check-ran"}},
			sidecar("fast", onTerm("fast")+"while true; do sleep 1; done"),
		},
		Containers: []v1.Container{{Name: "app", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
			Command: []string{"sh", "-c", onTerm("app") + "while true; do sleep 1; done"}}},
	}}
	create(t, ns, p)
	got := waitPod(t, ns, "sidecars", "Running and Ready", func(p *v1.Pod) bool {
		ready := p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name != "check" && (s.State.Running == nil || s.Started == nil || !*s.Started) {
				ready = false
			}
		}
		return ready
	})
	var slowStarted, checkStarted metav1.Time
	for _, s := range append(got.Status.InitContainerStatuses, got.Status.ContainerStatuses...) {
		t.Logf("%s: %+v", s.Name, s.State)
	}
	for _, s := range got.Status.InitContainerStatuses {
		switch {
		case s.Name == "slow" && s.State.Running != nil:
			slowStarted = s.State.Running.StartedAt
		case s.Name == "check" && s.State.Terminated != nil:
			checkStarted = s.State.Terminated.StartedAt
		}
	}
	if checkStarted.IsZero() || checkStarted.Sub(slowStarted.Time).Seconds() < 3 {
		t.Errorf("init container after the sidecar started at %v, sidecar at %v: it must wait for the startup probe (3 s)", checkStarted, slowStarted)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "sidecars", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "sidecars")
	if b, _ := os.ReadFile(filepath.Join(dir, "order")); string(b) != "app\nfast\nslow\n" {
		t.Errorf("termination order %q, want app, then the sidecars in reverse order", b)
	}

	// A sidecar does not hold the pod: the app completes, the pod succeeds.
	job := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job"}, Spec: v1.PodSpec{
		RestartPolicy:  v1.RestartPolicyNever,
		Volumes:        []v1.Volume{vol},
		InitContainers: []v1.Container{sidecar("helper", "trap 'exit 0' TERM; while true; do sleep 1; done")},
		Containers:     []v1.Container{{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sh", "-c", "sleep 1"}}},
	}}
	create(t, ns, job)
	done := waitPod(t, ns, "job", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	for _, s := range append(done.Status.InitContainerStatuses, done.Status.ContainerStatuses...) {
		t.Logf("job %s: %+v", s.Name, s.State)
	}
}

func TestPodSpecEphemeralContainers(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	create(t, ns, testPod("target"))
	waitPod(t, ns, "target", "Running", running)
	p, err := client.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command:                  []string{"sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline > /dev/termination-log; exit 4"},
			TerminationMessagePolicy: v1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log"},
		TargetContainerName: "main",
	})
	if _, err := client.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, "target", p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "target", "debugger terminated", func(p *v1.Pod) bool {
		return terminated(p.Status.EphemeralContainerStatuses, "debugger") != nil
	})
	term := terminated(got.Status.EphemeralContainerStatuses, "debugger")
	if term.ExitCode != 4 || !strings.Contains(term.Message, "/testserver") {
		t.Errorf("debugger (in main's PID namespace) saw %q, exit %d", term.Message, term.ExitCode)
	}
	if got.Status.ContainerStatuses[0].RestartCount != 0 || got.Status.Phase != v1.PodRunning {
		t.Errorf("target disturbed: %+v", got.Status.ContainerStatuses)
	}

	// kubectl debug works against this node.
	kubeconfig := filepath.Join(clusterDir, "admin.kubeconfig")
	out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", ns, "debug", "target", "--image="+testImage,
		"--container=kdebug", "--target=main", "--", "sh", "-c", "echo from-kubectl > /dev/termination-log").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl debug: %v\n%s", err, out)
	}
	got = waitPod(t, ns, "target", "kubectl debug container terminated", func(p *v1.Pod) bool {
		return terminated(p.Status.EphemeralContainerStatuses, "kdebug") != nil
	})
	if m := terminated(got.Status.EphemeralContainerStatuses, "kdebug").Message; m != "from-kubectl\n" {
		t.Errorf("kubectl debug container: %q", m)
	}
	// An exited ephemeral container is never restarted.
	got = waitPod(t, ns, "target", "Running", running)
	for _, s := range got.Status.EphemeralContainerStatuses {
		if s.State.Terminated == nil || s.RestartCount != 0 {
			t.Errorf("ephemeral %s: %+v", s.Name, s.State)
		}
	}
}

func TestPodSpecTerminationMessages(t *testing.T) {
	node(t)
	ns := namespace(t)
	custom := shPod("custom", `echo -n DONE > /dev/termination-custom-log`)
	custom.Spec.Containers[0].TerminationMessagePath = "/dev/termination-custom-log"
	custom.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](1000)}
	if m := message(t, runToEnd(t, ns, custom)); m != "DONE" {
		t.Errorf("non-root, non-default path: %q", m)
	}

	logs := shPod("logs", `for i in $(seq 1 100); do echo line-$i; done; exit 1`)
	logs.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	create(t, ns, logs)
	got := waitPod(t, ns, "logs", "Failed", finished)
	m := message(t, got)
	if !strings.HasSuffix(m, "line-99\nline-100\n") || strings.Contains(m, "line-20\n") || strings.Count(m, "\n") > 80 {
		t.Errorf("fallback to logs gave %d lines ending %q", strings.Count(m, "\n"), m[max(0, len(m)-30):])
	}

	ok := shPod("ok", `echo should-not-show`)
	ok.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	if m := message(t, runToEnd(t, ns, ok)); m != "" {
		t.Errorf("a succeeded container must not fall back to logs: %q", m)
	}

	big := shPod("big", `head -c 6000 /dev/zero | tr '\0' a > /dev/termination-log; echo -n END >> /dev/termination-log`)
	if m := message(t, runToEnd(t, ns, big)); len(m) != 4096 || !strings.HasSuffix(m, "END") {
		t.Errorf("a long message keeps its last 4096 bytes: %d bytes", len(m))
	}
}

func TestPodSpecRuntimeClass(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	name := "e2e-runc-" + ns[len(ns)-5:]
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}}
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	p := testPod("rc")
	p.Spec.RuntimeClassName = ptr.To(name)
	create(t, ns, p)
	got := waitPod(t, ns, "rc", "Running", running)
	if got.Spec.Overhead.Cpu().MilliValue() != 10 {
		t.Errorf("overhead %v", got.Spec.Overhead)
	}

	// A handler the runtime does not have: a clear sandbox error.
	bad := "e2e-nohandler-" + ns[len(ns)-5:]
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: bad}, Handler: "nosuchhandler"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.NodeV1().RuntimeClasses().Delete(context.Background(), bad, metav1.DeleteOptions{}) })
	bp := testPod("badrc")
	bp.Spec.RuntimeClassName = ptr.To(bad)
	create(t, ns, bp)
	framework.Eventually(t, "FailedCreatePodSandBox naming the handler", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=badrc"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "FailedCreatePodSandBox" && strings.Contains(e.Message, "nosuchhandler") {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

// TestPodSpecAllAtOnce is the acceptance test: one pod using every feature
// at once starts and becomes Ready, and each container's readiness probe
// checks that it sees exactly what the spec asks for.
func TestPodSpecAllAtOnce(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"MODE": "fast"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"}, StringData: map[string]string{"TOKEN": "t0k"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, vol := hostDir(t)
	create(t, ns, allInOne(ns, "all-in-one", vol, ""))
	got := waitPod(t, ns, "all-in-one", "Ready", podspecReady)
	for _, s := range append(got.Status.InitContainerStatuses, got.Status.ContainerStatuses...) {
		if s.RestartCount != 0 {
			t.Errorf("%s restarted %d times", s.Name, s.RestartCount)
		}
	}
	// The same pod whose check expects one thing the spec does not ask
	// for: its readiness probe fails, so the checks above are real.
	create(t, ns, allInOne(ns, "all-wrong", vol, ` && test "$MODE" = slow`))
	framework.Eventually(t, "all-wrong's readiness probe fails", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=all-wrong"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			seen = append(seen, e.Reason)
			if e.Reason == "Unhealthy" && strings.Contains(e.Message, "Readiness probe failed") {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
	if p, err := client.CoreV1().Pods(ns).Get(ctx, "all-wrong", metav1.GetOptions{}); err != nil || podspecReady(p) {
		t.Errorf("all-wrong is Ready (%v)", err)
	}
}

// allInOne is the acceptance pod: every feature at once; each container's
// readiness probe checks what it sees (plus extraCheck).
func allInOne(ns, name string, vol v1.Volume, extraCheck string) *v1.Pod {
	mount := []v1.VolumeMount{{Name: "host", MountPath: "/host"}, {Name: "scratch", MountPath: "/scratch"}}
	fqdn := "all.sub." + ns + ".svc.cluster.local"
	// What every container checks, in its readiness probe.
	check := strings.Join([]string{
		`test "$MODE" = fast`, `test "$TOKEN" = t0k`, `test "$CFG_MODE" = fast`, `test "$WHO" = "` + name + `.` + ns + `"`,
		`test -n "$KUBERNETES_SERVICE_HOST"`,
		`test "$(hostname)" = ` + fqdn,
		`grep -q "^nameserver ` + clusterDNS + `$" /etc/resolv.conf`, `grep -q "ndots:5" /etc/resolv.conf`,
		`grep -q "^# Kubernetes-managed hosts file." /etc/hosts`, `grep -q "203.0.113.1.*alias.example" /etc/hosts`,
		`test "$(id -u)" = 1000`, `id -G | grep -qw 2000`,
		`grep -q "^NoNewPrivs:.*1" /proc/self/status`, `grep -q "^Seccomp:.*2" /proc/self/status`,
		`test "$(cat /proc/sys/kernel/shm_rmid_forced)" = 1`,
		`test -f /scratch/poststart-$HOSTNAME_TAG`,
	}, " && ") + extraCheck
	ctr := func(name, tag string) v1.Container {
		return v1.Container{Name: name, Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
			Command: []string{"/testserver", "--http-port=" + map[string]string{"a": "8080", "b": "8081", "side": "8082"}[tag]},
			EnvFrom: []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			Env: []v1.EnvVar{
				{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
				{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}},
				{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "WHO", Value: "$(POD).$(NS)"},
				{Name: "HOSTNAME_TAG", Value: tag},
			},
			SecurityContext: &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}},
			Lifecycle: &v1.Lifecycle{
				PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "touch /scratch/poststart-" + tag}}},
				PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo " + name + " >> /host/prestop"}}},
			},
			// Probe timeouts of 5 s, not the default 1 s: the test checks
			// what the containers see, and on a loaded 2-core machine a
			// probe's exec can take over a second (with other tests
			// running beside it, the sidecar's startup probe restarted it
			// once).
			ReadinessProbe:           &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", check}}}, PeriodSeconds: 1, TimeoutSeconds: 5},
			TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		}
	}
	side := ctr("side", "side")
	side.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	side.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8082)}}, PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 30}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			Hostname: "all", Subdomain: "sub", SetHostnameAsFQDN: ptr.To(true),
			HostAliases:           []v1.HostAlias{{IP: "203.0.113.1", Hostnames: []string{"alias.example"}}},
			ShareProcessNamespace: ptr.To(true),
			SecurityContext: &v1.PodSecurityContext{
				RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](2000),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
				Sysctls:        []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}},
			},
			Volumes: []v1.Volume{vol, {Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			InitContainers: []v1.Container{
				{Name: "init", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent, VolumeMounts: mount,
					Command: []string{"sh", "-c", "echo init-ok > /scratch/init"}},
				side,
			},
			Containers: []v1.Container{ctr("a", "a"), ctr("b", "b")},
		},
	}
}

func podspecReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
