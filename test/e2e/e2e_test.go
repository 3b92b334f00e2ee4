// Package e2e runs the kubelet as the node of a real local cluster
// (hack/cluster.sh: etcd, and kube-apiserver, kube-controller-manager and
// kube-scheduler built from upstream) and checks, through client-go, what a
// cluster user would see.
//
// The harness brings the control plane up (CLUSTER_NODE=0: no node of its
// own), stops the node kubelet of `make cluster` if one runs, since both
// would claim the same Node, and runs its own kubelet on the project's test
// containerd with the cluster's node identity.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/config/virtualnodes"
	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/test/framework"
)

const (
	clusterDir = "/var/lib/gokubelet/cluster"
	testImage  = "gokubelet.local/testimage:1.0"
)

var (
	repoRoot   string
	kubeletBin string
	runtimeSvc cri.RuntimeService
	client     kubernetes.Interface
	clusterEnv map[string]string

	kubeletOnce sync.Once
	kubelet     *framework.Kubelet
	staticDir   string
	// rootDir is the test kubelet's --root-dir; podLogsDir its
	// podLogsDir; workDir the run's temporary directory.
	rootDir    string
	podLogsDir string
	workDir    string

	// clusterDNS is the test kubelet's clusterDNS: the cluster's
	// (CLUSTER_DNS in kubelet-env) when it has one, else an address that
	// is only written into pods' resolv.conf.
	clusterDNS string

	// The shared kubelet's configuration file (and its content), its
	// bootstrapped kubeconfig and its --cert-dir.
	kubeletConfig     string
	kubeletConfigPath string
	nodeKubeconfig    string
	certDir           string
)

// clusterScriptEnv is the environment of every hack/cluster.sh call: the
// control plane without a node of its own, and CSR-signed certificates that
// live four minutes (rotated about every two), so that client certificate
// rotation happens, and is survived, during the run.
var clusterScriptEnv = []string{"CLUSTER_NODE=0", "CLUSTER_SIGNING_DURATION=4m"}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	repoRoot = framework.RepoRoot()
	tmp, err := os.MkdirTemp("", "gokubelet-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// Pods may still hold volume mounts (tmpfs, subPath bind mounts of host
	// directories) under the kubelet's root: unmount before removing.
	defer hostfs.UnmountAll(tmp)
	unlock, err := framework.LockCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer unlock()
	if err := setup(tmp); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	// The virtual nodes' serving CSRs are approved throughout (they renew
	// theirs every few minutes: CLUSTER_SIGNING_DURATION).
	approving, stopApproving := context.WithCancel(context.Background())
	go approveServingCSRs(approving, virtualServingCSR)
	code := m.Run()
	stopApproving()
	// GOKUBELET_E2E_KUBELET_LOG=<file> keeps the kubelet's whole log.
	if p := os.Getenv("GOKUBELET_E2E_KUBELET_LOG"); p != "" && kubelet != nil {
		if err := os.WriteFile(p, []byte(kubelet.Log()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		}
	}
	if kubelet != nil {
		if err := kubelet.Signal(syscall.SIGTERM); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		}
	}
	_ = framework.ClearRuntime(runtimeSvc)
	// The kubelet's virtual nodes stay registered when it stops, as a real
	// node does; the next user of the cluster (make test's conformance
	// tier) would take them for nodes it may use while their Leases still
	// look fresh.
	if err := deleteVirtualNodes(virtualnodes.LabelInstance + "=e2e"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: deleting the virtual nodes: %v\n", err)
	}
	return code
}

// deleteVirtualNodes deletes the Nodes the selector picks.
func deleteVirtualNodes(selector string) error {
	if client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
}

func setup(tmp string) error {
	var err error
	kubeletBin, runtimeSvc, err = framework.Setup(repoRoot, tmp)
	if err != nil {
		return err
	}
	// The control plane; the first run builds it from the Go module proxy
	// (minutes), later runs reuse the cached binaries.
	if err := framework.Script(repoRoot, clusterScriptEnv, "hack/cluster.sh", "up"); err != nil {
		return err
	}
	if err := framework.Script(repoRoot, nil, "hack/node.sh", "stop"); err != nil {
		return err
	}
	clusterEnv, err = framework.ReadClusterEnv(filepath.Join(clusterDir, "kubelet-env"))
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(clusterDir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 100, 200
	client, err = kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if err := sweepLeftovers(); err != nil {
		return err
	}
	clusterDNS = clusterEnv["CLUSTER_DNS"]
	if clusterDNS == "" {
		clusterDNS = "10.96.0.10"
	}
	workDir = tmp
	podLogsDir = filepath.Join(tmp, "pod-logs")
	staticDir = filepath.Join(tmp, "static")
	if err := os.MkdirAll(staticDir, 0o755); err != nil {
		return err
	}
	kubelet = &framework.Kubelet{Bin: kubeletBin}
	kubelet.HealthzPort, err = framework.FreeTCPPort()
	if err != nil {
		return err
	}
	// The upstream kubelet's usual secure configuration: the kubelet API
	// on 10250 with the cluster's serving certificate, x509 and webhook
	// authentication, no anonymous access, webhook authorization; the
	// node joins through TLS bootstrap and rotates its client
	// certificate (short-lived in this cluster, see clusterScriptEnv).
	kubeletConfig = fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: %s
cgroupDriver: cgroupfs
failSwapOn: false
readOnlyPort: 0
healthzPort: %d
podLogsDir: %s
clusterDomain: cluster.local
clusterDNS: [%q]
allowedUnsafeSysctls: ["kernel.msgmax"]
rotateCertificates: true
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
    cacheTTL: 2m
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
`, staticDir, framework.CRIEndpoint(), kubelet.HealthzPort, filepath.Join(tmp, "pod-logs"), clusterDNS,
		clusterEnv["KUBELET_TLS_CERT_FILE"], clusterEnv["KUBELET_TLS_KEY_FILE"], clusterEnv["CLUSTER_CA_FILE"])
	disk, err := framework.DiskConfig()
	if err != nil {
		return err
	}
	kubeletConfig += disk
	kubeletConfigPath = filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(kubeletConfigPath, []byte(kubeletConfig), 0o644); err != nil {
		return err
	}
	certDir = filepath.Join(tmp, "pki")
	nodeKubeconfig = filepath.Join(tmp, "kubeconfig")
	if clusterEnv["BOOTSTRAP_KUBECONFIG"] == "" {
		return fmt.Errorf("%s has no BOOTSTRAP_KUBECONFIG: hack/cluster.sh is older than this test", framework.ClusterEnvFile)
	}
	rootDir = filepath.Join(tmp, "root")
	kubelet.Args = []string{"--config", kubeletConfigPath, "--root-dir", rootDir,
		"--bootstrap-kubeconfig", clusterEnv["BOOTSTRAP_KUBECONFIG"], "--kubeconfig", nodeKubeconfig, "--cert-dir", certDir,
		"--hostname-override", clusterEnv["NODE_NAME"], "--node-ip", clusterEnv["NODE_IP"], "-v", "3"}
	// Two virtual nodes beside the real one (virtual_test.go).
	vnArgs, err := virtualNodesSetup(tmp)
	if err != nil {
		return err
	}
	kubelet.Args = append(kubelet.Args, vnArgs...)
	return nil
}

// sweepLeftovers deletes what an interrupted run of this tier left in
// the cluster: its test namespaces (namespace() names them e2e-…) and
// their pods. The runtime has just been cleared and no kubelet serves the
// node yet, so nothing would ever confirm those pods' deletion; they are
// removed at once (grace period 0), or the first test to count the
// node's pods (eviction, pod resources) would meet them.
func sweepLeftovers() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaces to sweep: %w", err)
	}
	for _, ns := range nss.Items {
		if !strings.HasPrefix(ns.Name, "e2e-") {
			continue
		}
		fmt.Fprintf(os.Stderr, "e2e: deleting namespace %s, left by an earlier run\n", ns.Name)
		// One the earlier run began to delete answers a second delete
		// with a conflict; its pods still need the push below.
		if ns.DeletionTimestamp == nil {
			if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
			}
		}
		if err := client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the pods of namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// parallelOnSharedKubelet makes t one of the tests that run side by side,
// after every sequential test of the tier, on the shared kubelet, which it
// pins (framework.Kubelet.Pin: a restart by any of them fails). It is for
// tests that mostly wait on the cluster (a certificate's lifetime,
// metrics-server's scrapes, a second control plane, the CSI sidecars) and
// never restart the kubelet. It returns the node's name.
func parallelOnSharedKubelet(t *testing.T) string {
	t.Helper()
	t.Parallel()
	name := node(t)
	kubelet.Pin(t)
	return name
}

// node starts the shared kubelet on first use and waits for the Node to be
// Ready.
func node(t *testing.T) string {
	t.Helper()
	kubeletOnce.Do(func() { kubelet.Start(t) })
	name := clusterEnv["NODE_NAME"]
	framework.Eventually(t, "node Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n), fmt.Sprintf("%v", n.Status.Conditions)
	})
	t.Cleanup(func() {
		framework.LogOnFailure(t, "kubelet", kubelet.Log())
	})
	return name
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// namespace makes a namespace for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = fmt.Sprintf("e2e-%s-%d", strings.TrimSuffix(name, "-"), time.Now().UnixNano()%100000)
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "default ServiceAccount in "+name, func() (bool, string) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// testPod runs the test image's server; args are extra testserver flags.
func testPod(name string, args ...string) *v1.Pod {
	c := v1.Container{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent}
	if len(args) > 0 {
		c.Command = append([]string{"/testserver"}, args...)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func listPods(t *testing.T, ns, selector string) []v1.Pod {
	t.Helper()
	l, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func waitPod(t *testing.T, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	framework.Eventually(t, name+" "+what, func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = p
		return cond(p), fmt.Sprintf("phase=%s reason=%s %v", p.Status.Phase, p.Status.Reason, p.Status.ContainerStatuses)
	})
	return last
}

func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	framework.Eventually(t, name+" deleted", func() (bool, string) {
		_, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func TestNodeIsReadyWithItsFacts(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info := n.Status.NodeInfo
	if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || info.KubeletVersion == "" || info.OSImage == "" || info.BootID == "" || info.MachineID == "" {
		t.Errorf("nodeInfo incomplete: %+v", info)
	}
	// containerd 2 reports its runtime handlers and features (1.6 none):
	// the default handler and runc, with recursive read-only mounts, and
	// never user namespaces (this kubelet refuses hostUsers: false).
	if strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://2.") || strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://v2.") {
		names := map[string]bool{}
		for _, h := range n.Status.RuntimeHandlers {
			names[h.Name] = true
			if h.Features == nil || h.Features.RecursiveReadOnlyMounts == nil || h.Features.UserNamespaces == nil || *h.Features.UserNamespaces {
				t.Errorf("runtime handler %q features %+v", h.Name, h.Features)
			}
		}
		if !names[""] || !names["runc"] || n.Status.Features == nil || n.Status.Features.SupplementalGroupsPolicy == nil {
			t.Errorf("containerd 2: runtimeHandlers %+v, features %+v", n.Status.RuntimeHandlers, n.Status.Features)
		}
	}
	if n.Labels["kubernetes.io/hostname"] == "" || n.Labels["kubernetes.io/os"] != "linux" {
		t.Errorf("labels: %v", n.Labels)
	}
	if n.Status.Allocatable.Pods().Value() != 110 || n.Status.Allocatable.Memory().Cmp(*n.Status.Capacity.Memory()) >= 0 {
		t.Errorf("allocatable %v vs capacity %v: want 110 pods and memory below capacity (eviction threshold)", n.Status.Allocatable, n.Status.Capacity)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("kubelet endpoint port = %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	for _, want := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		found := false
		for _, c := range n.Status.Conditions {
			if c.Type == want && c.Status == v1.ConditionFalse {
				found = true
			}
		}
		if !found {
			t.Errorf("condition %s=False missing: %v", want, n.Status.Conditions)
		}
	}
	// The Lease exists (it is created once the Node is registered) and is
	// renewed.
	var l1 *coordinationv1.Lease
	framework.Eventually(t, "the node's lease", func() (bool, string) {
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		l1 = l
		return err == nil, fmt.Sprint(err)
	})
	if ptr.Deref(l1.Spec.HolderIdentity, "") != name || ptr.Deref(l1.Spec.LeaseDurationSeconds, 0) != 40 {
		t.Errorf("lease spec: %+v", l1.Spec)
	}
	framework.Eventually(t, "lease renewed", func() (bool, string) {
		l2, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l2.Spec.RenewTime.After(l1.Spec.RenewTime.Time), l2.Spec.RenewTime.String()
	})
}

func TestDeploymentScalesUpAndDown(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](10),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       testPod("").Spec,
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "10 pods Running", func() (bool, string) {
		n := 0
		for _, p := range listPods(t, ns, "app=web") {
			if running(&p) {
				n++
			}
		}
		return n == 10, fmt.Sprintf("%d running", n)
	})
	// Scale through the scale subresource with a patch: the deployment
	// controller writes the object's status meanwhile, and a read-modify-
	// Update of the whole object loses that race now and then ("the object
	// has been modified"), as it did once on a fresh machine.
	if _, err := client.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "all pod objects gone", func() (bool, string) {
		n := len(listPods(t, ns, "app=web"))
		return n == 0, fmt.Sprintf("%d left", n)
	})
	framework.Eventually(t, "the Deployment scaled to 0", func() (bool, string) {
		cur, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *cur.Spec.Replicas == 0 && cur.Status.Replicas == 0,
			fmt.Sprintf("spec.replicas=%d status.replicas=%d", *cur.Spec.Replicas, cur.Status.Replicas)
	})
}

func TestPodThatCannotFitFails(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	p := testPod("huge")
	p.Spec.NodeName = name
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000")}
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "huge", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if got.Status.Reason != "OutOfcpu" || !strings.Contains(got.Status.Message, "cpu") {
		t.Errorf("reason %q message %q, want OutOfcpu", got.Status.Reason, got.Status.Message)
	}
}

func TestGracefulDeletionHonoursSIGTERMAndGracePeriod(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	// Exits 3s after SIGTERM, within a 30s grace period.
	polite := testPod("polite", "--term-delay=3s")
	polite.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	// Ignores SIGTERM: must be killed when its 4s grace period ends.
	stubborn := testPod("stubborn", "--ignore-term")
	stubborn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](4)
	for _, p := range []*v1.Pod{polite, stubborn} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		min, max time.Duration
	}{
		{"polite", 3 * time.Second, 25 * time.Second},
		{"stubborn", 4 * time.Second, 25 * time.Second},
	} {
		waitPod(t, ns, tc.name, "Running", running)
		start := time.Now()
		if err := client.CoreV1().Pods(ns).Delete(ctx, tc.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ns, tc.name)
		if took := time.Since(start); took < tc.min || took > tc.max {
			t.Errorf("%s: gone after %v, want between %v and %v", tc.name, took, tc.min, tc.max)
		}
	}
}

func TestStaticPodHasAMirrorPod(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: e2e-static
  namespace: default
spec:
  containers:
  - name: main
    image: gokubelet.local/testimage:1.0
    imagePullPolicy: IfNotPresent
`
	path := filepath.Join(staticDir, "e2e-static.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	mirrorName := "e2e-static-" + name
	m := waitPod(t, "default", mirrorName, "Running as a mirror pod", running)
	if m.Annotations["kubernetes.io/config.mirror"] == "" {
		t.Errorf("mirror annotation missing: %v", m.Annotations)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" || m.OwnerReferences[0].Name != name {
		t.Errorf("owner references: %+v", m.OwnerReferences)
	}
	containerID := m.Status.ContainerStatuses[0].ContainerID
	// Deleting the mirror pod recreates it; the static pod is untouched.
	if err := client.CoreV1().Pods("default").Delete(ctx, mirrorName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := waitPod(t, "default", mirrorName, "recreated", func(p *v1.Pod) bool { return p.UID != m.UID && running(p) })
	if again.Status.ContainerStatuses[0].ContainerID != containerID || again.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("static pod disturbed by the mirror deletion: %s -> %s", containerID, again.Status.ContainerStatuses[0].ContainerID)
	}
	// Removing the manifest removes the mirror pod.
	os.Remove(path)
	waitGone(t, "default", mirrorName)
}

func TestKubeletKill9AndRestartKeepsPods(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]string{}
	for _, n := range []string{"a", "b"} {
		p := waitPod(t, ns, n, "Running", running)
		before[n] = p.Status.ContainerStatuses[0].ContainerID
	}
	kubelet.Kill9(t)
	kubelet.Start(t)
	framework.Eventually(t, "node Ready again", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nodeReady(n), fmt.Sprint(err)
	})
	// A pod created after the restart runs: the kubelet is really back.
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("c"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "c", "Running after the restart", running)
	for _, n := range []string{"a", "b"} {
		p := waitPod(t, ns, n, "Running", running)
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID != before[n] || cs.RestartCount != 0 {
			t.Errorf("%s restarted across the kubelet restart: %s -> %s, restarts %d", n, before[n], cs.ContainerID, cs.RestartCount)
		}
	}
}

func TestAPIServerRestartResyncs(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "before", "Running", running)

	pidFile := "/run/gokubelet/cluster/kube-apiserver.pid"
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(strings.TrimSpace(string(b)), &pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil { // a crash: harsher than a drain, and quick
		t.Fatal(err)
	}
	framework.Eventually(t, "apiserver stopped", func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, "still running"
	})
	if err := framework.Script(repoRoot, clusterScriptEnv, "hack/cluster.sh", "up"); err != nil {
		t.Fatal(err)
	}
	// The kubelet's watches come back: a new pod runs, deletion works, the
	// node stays Ready and its lease is renewed.
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "after", "Running after the apiserver restart", running)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "before")
	l1, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "lease renewed after the restart", func() (bool, string) {
		l2, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		return err == nil && l2.Spec.RenewTime.After(l1.Spec.RenewTime.Time), fmt.Sprint(err)
	})
}

func TestActiveDeadlineEndsPodFailed(t *testing.T) {
	node(t)
	ns := namespace(t)
	p := testPod("deadline")
	p.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "deadline", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if got.Status.Reason != "DeadlineExceeded" {
		t.Errorf("reason %q, want DeadlineExceeded", got.Status.Reason)
	}
	if c := got.Status.ContainerStatuses[0]; c.State.Terminated == nil {
		t.Errorf("container not terminated in a failed pod: %+v", c.State)
	}
}

func TestKubeletRecordsEvents(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, testPod("ev"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "ev", "Running", running)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "ev", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "ev")
	framework.Eventually(t, "kubelet events Pulled, Created, Started, Killing", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=ev"})
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		var all []string
		for _, e := range l.Items {
			if e.Source.Component == "kubelet" || e.ReportingController == "kubelet" {
				seen[e.Reason] = true
			}
			all = append(all, e.Source.Component+"/"+e.Reason)
		}
		return seen["Pulled"] && seen["Created"] && seen["Started"] && seen["Killing"], fmt.Sprint(all)
	})
}

func TestDeletedNodeIsRecreated(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	old, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "node recreated and Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.UID != old.UID && nodeReady(n), fmt.Sprintf("uid %s ready %v", n.UID, nodeReady(n))
	})
	// The lease follows the new Node.
	framework.Eventually(t, "lease owned by the new node", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == n.UID, fmt.Sprint(l.OwnerReferences)
	})
}
