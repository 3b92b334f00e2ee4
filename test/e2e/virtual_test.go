package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gokubelet/kubelet/pkg/engine/virtual"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/provider/providertest"
	k8sprovider "github.com/gokubelet/kubelet/pkg/providers/kubernetes"
	"github.com/gokubelet/kubelet/test/framework"
)

// The shared kubelet of the e2e tier runs the real node and, from one
// virtual nodes file, two virtual nodes beside it: vk-target (the
// kubernetes provider, into namespaces vk-<ns> of this same cluster) and
// vk-mock. Tests add nodes to the file and take them out again; the
// kubelet follows the file while it runs.

const (
	vkTarget = "vk-target"
	vkMock   = "vk-mock"
)

var (
	vnMu     sync.Mutex
	vnConfig string // the file's path
	vnNodes  = map[string]string{}
)

// virtualNodesUser is the virtual nodes' identity that hack/virtual-nodes.sh
// issues.
const virtualNodesUser = "gokubelet:virtual-nodes"

// vnHeader: the nodes request their serving certificates by CSR
// (serverTLSBootstrap), which the e2e run approves (approveServingCSRs), so
// that metrics-server, which verifies kubelets' certificates, scrapes them.
func vnHeader() string {
	return fmt.Sprintf("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nkubeconfig: %s\ninstance: e2e\nserverTLSBootstrap: true\nnodes:\n",
		filepath.Join(clusterDir, "virtual-nodes.kubeconfig"))
}

// baseVirtualNodes are the shared kubelet's virtual nodes.
func baseVirtualNodes() map[string]string {
	return map[string]string{
		vkTarget: fmt.Sprintf(`- name: vk-target
  provider: kubernetes
  port: 10260
  podSync: {retryBase: 100ms, retryMax: 5s}
  providerConfig: {kubeconfig: %s, namespacePrefix: "vk-"}
`, filepath.Join(clusterDir, "admin.kubeconfig")),
		vkMock: `- name: vk-mock
  provider: mock
  port: 10261
  providerConfig: {startDelay: 100ms, usage: {cpu: 10m, memory: 16Mi}}
`,
	}
}

// virtualNodesSetup issues the virtual nodes' identity and writes their
// file; it returns the kubelet flags.
func virtualNodesSetup(tmp string) ([]string, error) {
	// --shared: the tests use nodes acting as the file's identity, and
	// take nodes out of the file (their Nodes deleted);
	// TestVirtualNodesRunWithLeastPrivilege runs the default RBAC alone.
	if err := framework.Script(repoRoot, nil, "hack/virtual-nodes.sh", "creds", "--shared"); err != nil {
		return nil, err
	}
	vnConfig = filepath.Join(tmp, "virtual-nodes.yaml")
	vnNodes = baseVirtualNodes()
	if err := writeVirtualNodes(); err != nil {
		return nil, err
	}
	return []string{"--virtual-nodes-config", vnConfig}, nil
}

func writeVirtualNodes() error {
	var b strings.Builder
	b.WriteString(vnHeader())
	for _, name := range []string{vkTarget, vkMock, "vk-failing", "vk-cluster2", "vk-ident", "vk-boot"} {
		b.WriteString(vnNodes[name])
	}
	tmp := vnConfig + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, vnConfig)
}

// setVirtualNode adds (def != "") or removes a node from the file.
func setVirtualNode(t *testing.T, name, def string) {
	t.Helper()
	vnMu.Lock()
	defer vnMu.Unlock()
	if def == "" {
		delete(vnNodes, name)
	} else {
		vnNodes[name] = def
	}
	if err := writeVirtualNodes(); err != nil {
		t.Fatal(err)
	}
}

func waitNodeGone(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, "node "+name+" deleted", func() (bool, string) {
		_, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// A Deployment pinned to a virtual node (node selector and the virtual
// node toleration).
func pinnedDeployment(name, node string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      nodeSelector: {kubernetes.io/hostname: %[2]s}
      tolerations: [{key: virtual-kubelet.io/provider, operator: Exists}]
      terminationGracePeriodSeconds: 5
      containers:
      - name: main
        image: gokubelet.local/testimage:1.0
        imagePullPolicy: IfNotPresent
        command: [/testserver, --tcp-port=7000]
        env:
        # optional: the target here is this cluster, whose real node on
        # main does not resolve ConfigMap env yet (branch podspec); the copy
        # and the renamed reference are checked either way.
        - {name: GREETING, valueFrom: {configMapKeyRef: {name: settings, key: greeting, optional: true}}}
        - {name: MY_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        volumeMounts: [{name: settings, mountPath: /etc/settings}]
      volumes: [{name: settings, configMap: {name: settings}}]
`, name, node, replicas)
}

func settingsConfigMap(ns string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: %s}\ndata: {greeting: hello}\n", ns)
}

// dumpOnFailure logs the pods of the namespaces (status and events) when
// the test failed.
func dumpOnFailure(t *testing.T, c kubernetes.Interface, namespaces ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, ns := range namespaces {
			pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Logf("pods of %s: %v", ns, err)
				continue
			}
			for i, p := range pods.Items {
				if i == 5 {
					t.Logf("... %d pods in %s", len(pods.Items), ns)
					break
				}
				t.Logf("pod %s/%s on %q: phase %s reason %q message %q containers %+v", ns, p.Name, p.Spec.NodeName,
					p.Status.Phase, p.Status.Reason, p.Status.Message, p.Status.ContainerStatuses)
			}
			evs, _ := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if evs != nil {
				for i, e := range evs.Items {
					if i == 15 {
						break
					}
					t.Logf("event %s %s %s: %s", e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
				}
			}
		}
	})
}

func targetNamespaceCleanup(t *testing.T, c kubernetes.Interface, ns string) {
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
}

// TestVirtualNodes is the acceptance of the virtual nodes, in order: one
// configuration runs the real node and two virtual nodes; a Deployment
// pinned to the kubernetes-provider node runs in the target and is
// deleted from the origin; a mock that fails creates shows it on the
// pod; removing a node from the file removes only that node.
func TestVirtualNodes(t *testing.T) {
	// Mostly waits for metrics-server's scrapes, beside the other waiting
	// tests.
	real := parallelOnSharedKubelet(t)
	ctx := context.Background()

	t.Run("ThreeNodesReady", func(t *testing.T) {
		for _, name := range []string{vkTarget, vkMock} {
			n := waitNodeReady(t, name, framework.WaitLimit)
			if n.Labels["type"] != "virtual-kubelet" || n.Labels["node.gokubelet.io/virtual-nodes-instance"] != "e2e" {
				t.Errorf("%s labels = %v", name, n.Labels)
			}
			tainted := false
			for _, tn := range n.Spec.Taints {
				tainted = tainted || (tn.Key == "virtual-kubelet.io/provider" && tn.Effect == v1.TaintEffectNoSchedule)
			}
			if !tainted {
				t.Errorf("%s taints = %v, want the virtual node taint", name, n.Spec.Taints)
			}
			if n.Status.Addresses[0].Type != v1.NodeInternalIP || n.Status.Addresses[0].Address != clusterEnv["NODE_IP"] {
				t.Errorf("%s addresses = %v, want the machine's IP first", name, n.Status.Addresses)
			}
			if n.Status.Allocatable.Pods().Value() == 0 {
				t.Errorf("%s has no pod capacity: %v", name, n.Status.Allocatable)
			}
			// The Lease is created once the Node is registered (it is
			// owned by the Node), so it may follow the Ready Node.
			framework.Eventually(t, name+"'s lease", func() (bool, string) {
				_, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
				return err == nil, fmt.Sprint(err)
			})
		}
		if p := waitNodeReady(t, vkTarget, framework.WaitLimit).Status.DaemonEndpoints.KubeletEndpoint.Port; p != 10260 {
			t.Errorf("vk-target kubelet port = %d", p)
		}
		out := mustKubectl(t, nil, "", "", "get", "nodes", "--no-headers")
		for _, name := range []string{real, vkTarget, vkMock} {
			found := false
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) >= 2 && f[0] == name && f[1] == "Ready" {
					found = true
				}
			}
			if !found {
				t.Errorf("kubectl get nodes does not show %s Ready:\n%s", name, out)
			}
		}
	})

	t.Run("MockRunsAPod", func(t *testing.T) {
		ns := namespace(t)
		p := testPod("on-mock")
		p.Spec.NodeName = vkMock
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPod(t, ns, "on-mock", "Running", running)
		if got.Status.PodIP == "" || got.Status.HostIP != clusterEnv["NODE_IP"] {
			t.Errorf("status ips %q %q", got.Status.PodIP, got.Status.HostIP)
		}
		if err := client.CoreV1().Pods(ns).Delete(ctx, "on-mock", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ns, "on-mock")
	})

	// Each virtual node serves the kubelet API at the port its Node
	// advertises: kubectl logs, exec (with its exit code) and
	// port-forward reach its pods through the API server, and the port
	// refuses callers without credentials (401) or without rights (403).
	t.Run("KubeletAPIServesItsPods", func(t *testing.T) {
		ns := namespace(t)
		tns := "vk-" + ns
		targetNamespaceCleanup(t, client, tns)
		dumpOnFailure(t, client, ns, tns)
		nobody := saToken(t, ns, "nobody")
		for _, tc := range []struct {
			node    string
			port    int
			logLine string
		}{
			{vkMock, 10261, "mock: container main running on node " + vkMock},
			{vkTarget, 10260, "tcp echo listening on"},
		} {
			t.Run(tc.node, func(t *testing.T) {
				name := "api-" + tc.node
				p := testPod(name, "--tcp-port=9000")
				p.Spec.NodeName = tc.node
				p.Spec.Containers[0].Stdin = true
				createPod(t, ns, p)
				waitPod(t, ns, name, "Running", running)

				framework.Eventually(t, "kubectl logs "+name, func() (bool, string) {
					out, errs, code := kubectl(t, nil, "", ns, "logs", name)
					return code == 0 && strings.Contains(out, tc.logLine), fmt.Sprintf("exit %d: %s%s", code, out, errs)
				})
				if out, errs, code := kubectl(t, nil, "", ns, "exec", name, "--", "echo", "hello"); code != 0 || out != "hello\n" {
					t.Errorf("kubectl exec echo: exit %d stdout %q stderr %q", code, out, errs)
				}
				if _, errs, code := kubectl(t, nil, "", ns, "exec", name, "--", "sh", "-c", "exit 3"); code != 3 {
					t.Errorf("kubectl exec exit 3: exit %d, want 3 (%s)", code, errs)
				}
				if got := portForwardEcho(t, ns, name, 9000, "ping\n"); got != "ping\n" {
					t.Errorf("port-forward echo: %q", got)
				}
				// Standard input through exec -i.
				if out, errs, code := kubectl(t, nil, "stdin-line\n", ns, "exec", "-i", name, "--", "cat"); code != 0 || out != "stdin-line\n" {
					t.Errorf("kubectl exec -i cat: exit %d stdout %q stderr %q", code, out, errs)
				}
				if tc.node == vkMock {
					// attach -i: the mock's container echoes its input.
					if out, errs, code := kubectl(t, nil, "attached\n", ns, "attach", "-i", name); code != 0 || !strings.Contains(out, "attached\n") {
						t.Errorf("kubectl attach -i: exit %d stdout %q stderr %q", code, out, errs)
					}
				} else {
					// logs -f: the target container's log, streamed until
					// the client stops.
					followFirstLine(t, ns, name, tc.logLine)
				}
				// Through the API server's node proxy: the node's own pods.
				if out := mustKubectl(t, nil, "", "", "get", "--raw", "/api/v1/nodes/"+tc.node+"/proxy/pods"); !strings.Contains(out, `"name":"`+name+`"`) {
					t.Errorf("/pods of %s through the API server does not list %s:\n%.500s", tc.node, name, out)
				}
				if tc.node == vkMock {
					// The mock's configured usage, as metrics-server reads it.
					want := `container_memory_working_set_bytes{container="main",namespace="` + ns + `",pod="` + name + `"} 1.6777216e+07`
					if out := mustKubectl(t, nil, "", "", "get", "--raw", "/api/v1/nodes/"+tc.node+"/proxy/metrics/resource"); !strings.Contains(out, want) {
						t.Errorf("/metrics/resource of %s has no %s:\n%.800s", tc.node, want, out)
					}
					if out := mustKubectl(t, nil, "", "", "get", "--raw", "/api/v1/nodes/"+tc.node+"/proxy/stats/summary"); !strings.Contains(out, `"name":"`+name+`"`) || !strings.Contains(out, `"usageNanoCores":10000000`) {
						t.Errorf("/stats/summary of %s:\n%.800s", tc.node, out)
					}
				}
				// Directly, without credentials and without rights.
				if code, body := callKubeletAt(t, tc.port, "", nil, "/pods"); code != 401 || strings.Contains(body, name) {
					t.Errorf("%s /pods without credentials: %d %.200q", tc.node, code, body)
				}
				if code, body := callKubeletAt(t, tc.port, nobody, nil, "/pods"); code != 403 || !strings.Contains(body, "system:serviceaccount:"+ns+":nobody") || strings.Contains(body, name) {
					t.Errorf("%s /pods with a token without rights: %d %.200q", tc.node, code, body)
				}
			})
		}
		// kubectl top through metrics-server, which verifies each node's
		// serving certificate (CSR-issued, approveServingCSRs): the mock's
		// configured usage, and the target's measured figures for the
		// kubernetes provider's pod. metrics-server needs two scrapes for a
		// CPU rate, and the target's own figures two scrapes of its node.
		framework.EventuallyWithin(t, 4*time.Minute, "kubectl top pod on both virtual nodes", func() (bool, string) {
			out, errs, code := kubectl(t, nil, "", ns, "top", "pod", "--no-headers")
			if code != 0 {
				return false, errs
			}
			rows := map[string][]string{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if f := strings.Fields(line); len(f) == 3 {
					rows[f[0]] = f[1:]
				}
			}
			mockRow, targetRow := rows["api-"+vkMock], rows["api-"+vkTarget]
			if mockRow == nil || mockRow[0] != "10m" || mockRow[1] != "16Mi" {
				return false, "vk-mock: " + out
			}
			if targetRow == nil || !strings.HasSuffix(targetRow[0], "m") || targetRow[1] == "0Mi" || !strings.HasSuffix(targetRow[1], "Mi") {
				return false, "vk-target: " + out
			}
			return true, out
		})
		// kubectl top node: a virtual node's figures are its pods' sums.
		framework.EventuallyWithin(t, 2*time.Minute, "kubectl top node on both virtual nodes", func() (bool, string) {
			out, errs, code := kubectl(t, nil, "", "", "top", "node", "--no-headers")
			if code != 0 {
				return false, errs
			}
			seen := 0
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				// NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%
				f := strings.Fields(line)
				if len(f) >= 4 && (f[0] == vkMock || f[0] == vkTarget) && strings.HasSuffix(f[1], "m") && strings.HasSuffix(f[3], "Mi") && f[3] != "0Mi" {
					seen++
				}
			}
			return seen == 2, out
		})
	})

	t.Run("DeploymentRunsInTarget", func(t *testing.T) {
		ns := namespace(t)
		tns := "vk-" + ns
		targetNamespaceCleanup(t, client, tns)
		dumpOnFailure(t, client, ns, tns)
		mustKubectl(t, nil, settingsConfigMap(ns), "", "apply", "-f", "-")
		mustKubectl(t, nil, pinnedDeployment("web", vkTarget, 2), "", "apply", "-n", ns, "-f", "-")
		var origin []v1.Pod
		framework.Eventually(t, "2 pods Running on vk-target", func() (bool, string) {
			origin = listPods(t, ns, "app=web")
			n := 0
			for i := range origin {
				if running(&origin[i]) && origin[i].Spec.NodeName == vkTarget && origin[i].Status.PodIP != "" {
					n++
				}
			}
			return n == 2, fmt.Sprintf("%d running", n)
		})
		targets := listPods(t, tns, "gokubelet.io/virtual-node="+vkTarget)
		if len(targets) != 2 {
			t.Fatalf("%d target pods in %s, want 2", len(targets), tns)
		}
		byName := map[string]v1.Pod{}
		for _, tp := range targets {
			byName[tp.Name] = tp
		}
		for _, op := range origin {
			tp, ok := byName[op.Name]
			if !ok {
				t.Errorf("no target pod for %s", op.Name)
				continue
			}
			if tp.Spec.NodeName != real || tp.Labels["gokubelet.io/origin-uid"] != string(op.UID) {
				t.Errorf("target pod %s on %q, origin-uid %q", tp.Name, tp.Spec.NodeName, tp.Labels["gokubelet.io/origin-uid"])
			}
			if op.Status.PodIP != tp.Status.PodIP {
				t.Errorf("origin pod IP %s, target %s: not mirrored", op.Status.PodIP, tp.Status.PodIP)
			}
			env := map[string]v1.EnvVar{}
			for _, e := range tp.Spec.Containers[0].Env {
				env[e.Name] = e
			}
			if env["MY_NAMESPACE"].Value != ns || env["MY_NODE"].Value != vkTarget {
				t.Errorf("downward API in the target: %+v %+v, want the origin's values", env["MY_NAMESPACE"], env["MY_NODE"])
			}
			if ref := env["GREETING"].ValueFrom; ref == nil || ref.ConfigMapKeyRef == nil || !strings.HasPrefix(ref.ConfigMapKeyRef.Name, "settings-") {
				t.Errorf("GREETING = %+v, want a reference to the copy of settings", env["GREETING"])
			} else if cm, err := client.CoreV1().ConfigMaps(tns).Get(ctx, ref.ConfigMapKeyRef.Name, metav1.GetOptions{}); err != nil || cm.Data["greeting"] != "hello" {
				t.Errorf("copy of settings: %v %v", cm, err)
			}
		}
		// Status from the origin, as a user reads it.
		out := mustKubectl(t, nil, "", "", "get", "pods", "-n", ns, "-o", "wide", "--no-headers")
		if strings.Count(out, "Running") != 2 || strings.Count(out, vkTarget) != 2 {
			t.Errorf("kubectl get pods -o wide:\n%s", out)
		}
		// Delete from the origin: the target is cleaned up.
		mustKubectl(t, nil, "", "", "delete", "deployment", "web", "-n", ns, "--wait=false")
		framework.Eventually(t, "origin pods gone", func() (bool, string) {
			n := len(listPods(t, ns, "app=web"))
			return n == 0, fmt.Sprintf("%d left", n)
		})
		framework.Eventually(t, "target pods and copies gone", func() (bool, string) {
			pods := listPods(t, tns, "gokubelet.io/virtual-node="+vkTarget)
			cms, err := client.CoreV1().ConfigMaps(tns).List(ctx, metav1.ListOptions{LabelSelector: "gokubelet.io/virtual-node=" + vkTarget})
			if err != nil {
				return false, err.Error()
			}
			return len(pods) == 0 && len(cms.Items) == 0, fmt.Sprintf("%d pods, %d configmap copies", len(pods), len(cms.Items))
		})
	})

	t.Run("FailingProviderShowsOnPod", func(t *testing.T) {
		setVirtualNode(t, "vk-failing", `- name: vk-failing
  provider: mock
  port: 10262
  podSync: {retryBase: 200ms, retryMax: 2s}
  providerConfig: {failureRate: {create: 1}}
`)
		waitNodeReady(t, "vk-failing", framework.WaitLimit)
		ns := namespace(t)
		p := testPod("doomed")
		p.Spec.NodeName = "vk-failing"
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPod(t, ns, "doomed", "showing the provider failure", func(p *v1.Pod) bool {
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w.Reason == virtual.ReasonCreateFailed && strings.Contains(w.Message, "injected failure")
		})
		if got.Status.Phase != v1.PodPending {
			t.Errorf("phase %s while retried, want Pending", got.Status.Phase)
		}
		framework.Eventually(t, "a ProviderCreateFailed event", func() (bool, string) {
			evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=doomed"})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Reason == virtual.ReasonCreateFailed && e.Type == v1.EventTypeWarning {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
		if out := mustKubectl(t, nil, "", "", "get", "pod", "doomed", "-n", ns, "--no-headers"); !strings.Contains(out, virtual.ReasonCreateFailed) {
			t.Errorf("kubectl get pod does not show the failure:\n%s", out)
		}
	})

	t.Run("RemovingANodeRemovesOnlyIt", func(t *testing.T) {
		if _, err := client.CoreV1().Nodes().Get(ctx, "vk-failing", metav1.GetOptions{}); err != nil {
			t.Skip("vk-failing was not added (see FailingProviderShowsOnPod)")
		}
		before := map[string]metav1.MicroTime{}
		for _, name := range []string{real, vkTarget, vkMock} {
			// A Lease the garbage collector took with an older Node of the
			// same name (a machine's Node registered afresh) is recreated
			// at the next renewal.
			framework.Eventually(t, name+"'s lease", func() (bool, string) {
				l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				before[name] = *l.Spec.RenewTime
				return true, ""
			})
		}
		setVirtualNode(t, "vk-failing", "")
		waitNodeGone(t, "vk-failing")
		for _, name := range []string{real, vkTarget, vkMock} {
			waitNodeReady(t, name, framework.WaitLimit)
			framework.Eventually(t, name+"'s lease still renewed", func() (bool, string) {
				l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return l.Spec.RenewTime.After(before[name].Time), l.Spec.RenewTime.String()
			})
		}
	})
}

// The provider conformance suite against the kubernetes provider, with
// this cluster as its target (namespace pt-<ns>).
func TestKubernetesProviderConformance(t *testing.T) {
	node(t)
	ns := namespace(t)
	targetNamespaceCleanup(t, client, "pt-"+ns)
	origin := vnClient(t, filepath.Join(clusterDir, "virtual-nodes.kubeconfig"))
	providertest.Run(t, providertest.Harness{
		Namespace: ns,
		// Streams run too: the target's API server proxies logs, exec and
		// port-forward to this cluster's node, this kubelet's 10250.
		New: func(t *testing.T, nodeName string) provider.Provider {
			p, err := k8sprovider.New(context.Background(), provider.InitConfig{
				NodeName: nodeName, Client: origin, Objects: virtual.ClientObjects{Client: origin},
				Config: []byte(fmt.Sprintf(`{"kubeconfig": %q, "namespacePrefix": "pt-"}`, filepath.Join(clusterDir, "admin.kubeconfig"))),
			})
			if err != nil {
				t.Fatal(err)
			}
			kp := p.(*k8sprovider.Provider)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = kp.Start(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			select {
			case <-kp.Ready():
			case <-time.After(framework.WaitLimit):
				t.Fatal("the kubernetes provider did not sync with the target")
			}
			return p
		},
	})
}

func vnClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A virtual node whose target is a second control plane: its pods run
// there (on a mock virtual node of that cluster, run by a second kubelet
// process with no real node), status comes back, deletion cleans up.
func TestVirtualNodeOnSecondControlPlane(t *testing.T) {
	// Its own control plane and kubelet; beside the other waiting tests.
	parallelOnSharedKubelet(t)
	ctx := context.Background()
	dir2 := "/var/lib/gokubelet/cluster2"
	env2 := []string{
		"CLUSTER_DIR=" + dir2, "CLUSTER_RUN_DIR=/run/gokubelet/cluster2", "CLUSTER_LOG_DIR=/var/log/gokubelet/cluster2",
		"CLUSTER_NAME=gokubelet2", "CLUSTER_NODE=0", "ETCD_CLIENT_PORT=23791", "ETCD_PEER_PORT=23801",
		"APISERVER_PORT=6444", "CONTROLLER_MANAGER_PORT=10267", "SCHEDULER_PORT=10269",
		// The first cluster's metrics-server, kube-proxy and CoreDNS hold
		// their ports; this cluster's only node is virtual and needs none.
		"METRICS_SERVER=0", "CLUSTER_ADDONS=0",
	}
	t.Cleanup(func() {
		if err := framework.Script(repoRoot, env2, "hack/cluster.sh", "down", "--purge"); err != nil {
			t.Errorf("stopping the second control plane: %v", err)
		}
	})
	if err := framework.Script(repoRoot, env2, "hack/cluster.sh", "up"); err != nil {
		t.Fatal(err)
	}
	admin2 := filepath.Join(dir2, "admin.kubeconfig")
	client2 := vnClient(t, admin2)

	// Cluster 2's only node: a mock virtual node, untainted so the copies
	// land on it.
	tmp := t.TempDir()
	cfg2 := filepath.Join(tmp, "vn2.yaml")
	if err := os.WriteFile(cfg2, []byte(`apiVersion: gokubelet.io/v1alpha1
kind: VirtualNodes
realNode: false
instance: e2e-cluster2
nodes:
- name: c2-mock
  provider: mock
  port: 10270
  taints: []
  providerConfig: {startDelay: 100ms}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	startVirtualOnlyKubelet(t, "cluster 2 kubelet", admin2, cfg2, filepath.Join(tmp, "root"))
	framework.Eventually(t, "c2-mock Ready in cluster 2", func() (bool, string) {
		n, err := client2.CoreV1().Nodes().Get(ctx, "c2-mock", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(n), fmt.Sprint(n.Status.Conditions)
	})

	// In cluster 1, a virtual node whose target is cluster 2.
	setVirtualNode(t, "vk-cluster2", fmt.Sprintf(`- name: vk-cluster2
  provider: kubernetes
  port: 10263
  podSync: {retryBase: 100ms, retryMax: 5s}
  providerConfig: {kubeconfig: %s, namespacePrefix: "c1-"}
`, admin2))
	t.Cleanup(func() {
		setVirtualNode(t, "vk-cluster2", "")
		waitNodeGone(t, "vk-cluster2")
	})
	n := waitNodeReady(t, "vk-cluster2", framework.WaitLimit)
	if n.Status.Allocatable.Pods().Value() != 20000 {
		t.Errorf("vk-cluster2 pods capacity %v, want cluster 2's mock node's 20000", n.Status.Allocatable.Pods())
	}

	ns := namespace(t)
	dumpOnFailure(t, client, ns)
	dumpOnFailure(t, client2, "c1-"+ns)
	mustKubectl(t, nil, settingsConfigMap(ns), "", "apply", "-f", "-")
	mustKubectl(t, nil, pinnedDeployment("remote", "vk-cluster2", 1), "", "apply", "-n", ns, "-f", "-")
	var origin v1.Pod
	framework.Eventually(t, "the pod Running on vk-cluster2", func() (bool, string) {
		pods := listPods(t, ns, "app=remote")
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods))
		}
		origin = pods[0]
		return running(&origin) && origin.Spec.NodeName == "vk-cluster2", fmt.Sprintf("%s %v", origin.Status.Phase, origin.Status.ContainerStatuses)
	})
	tp, err := client2.CoreV1().Pods("c1-"+ns).Get(ctx, origin.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod in cluster 2: %v", err)
	}
	if tp.Spec.NodeName != "c2-mock" || tp.Status.PodIP != origin.Status.PodIP || tp.Labels["gokubelet.io/origin-uid"] != string(origin.UID) {
		t.Errorf("target pod on %q ip %q uid label %q; origin ip %q uid %s", tp.Spec.NodeName, tp.Status.PodIP,
			tp.Labels["gokubelet.io/origin-uid"], origin.Status.PodIP, origin.UID)
	}
	mustKubectl(t, nil, "", "", "delete", "deployment", "remote", "-n", ns, "--wait=false")
	framework.Eventually(t, "the pod gone from both clusters", func() (bool, string) {
		left := len(listPods(t, ns, "app=remote"))
		remote, err := client2.CoreV1().Pods("c1-"+ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return left == 0 && len(remote.Items) == 0, fmt.Sprintf("%d origin, %d target", left, len(remote.Items))
	})

	// The target's API server goes away: vk-cluster2 turns NotReady with
	// the reason within 40 s while the real node's healthz stays ok, and
	// it is Ready again once the target answers.
	pidFile := "/run/gokubelet/cluster2/kube-apiserver.pid"
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	// Killed outright, as in an outage (a graceful stop lingers for a
	// minute while no longer serving).
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("stopping cluster 2's kube-apiserver: %v", err)
	}
	stopped := time.Now()
	within(t, 40*time.Second, "vk-cluster2 NotReady, the target named", func() (bool, string) {
		if code, body := realHealthz(); code != 200 {
			t.Errorf("the real node's healthz while the target is away: %d %s", code, body)
		}
		n, err := client.CoreV1().Nodes().Get(ctx, "vk-cluster2", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				// The provider's reason is told in the message (the
				// condition's reason is the kubelet's, KubeletNotReady).
				return c.Status == v1.ConditionFalse && strings.Contains(c.Message, "the target cluster's API server is not ready"), fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no Ready condition"
	})
	t.Logf("vk-cluster2 NotReady %v after its target's API server stopped", time.Since(stopped).Round(time.Second))
	within(t, framework.WaitLimit, "the killed kube-apiserver gone", func() (bool, string) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if err := framework.Script(repoRoot, env2, "hack/cluster.sh", "up"); err != nil {
		t.Fatal(err)
	}
	waitNodeReady(t, "vk-cluster2", framework.WaitLimit)
	if code, body := realHealthz(); code != 200 {
		t.Errorf("the real node's healthz after the target came back: %d %s", code, body)
	}
}

// realHealthz asks the real node's healthz endpoint.
func realHealthz() (int, string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", kubelet.HealthzPort))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ---- Attacks by a tenant of the target cluster ------------------------
//
// The kubernetes provider runs in the test (origin: this cluster with the
// virtual nodes' identity; target: this cluster as admin, namespaces
// at-<ns>), so the attacks meet real API servers and the provider's
// answers are observed directly. The tenant may create, label and delete
// Secrets and pods in the target namespace.

// attackProvider starts a kubernetes provider for virtual node nodeName
// whose notifications are recorded.
type attackProvider struct {
	*k8sprovider.Provider
	mu   sync.Mutex
	seen []*v1.Pod
}

func startAttackProvider(t *testing.T, nodeName string) *attackProvider {
	t.Helper()
	origin := vnClient(t, filepath.Join(clusterDir, "virtual-nodes.kubeconfig"))
	p, err := k8sprovider.New(context.Background(), provider.InitConfig{
		NodeName: nodeName, Client: origin, Objects: virtual.ClientObjects{Client: origin}, StateDir: t.TempDir(),
		Config: []byte(fmt.Sprintf(`{"kubeconfig": %q, "namespacePrefix": "at-"}`, filepath.Join(clusterDir, "admin.kubeconfig"))),
	})
	if err != nil {
		t.Fatal(err)
	}
	ap := &attackProvider{Provider: p.(*k8sprovider.Provider)}
	ctx, cancel := context.WithCancel(context.Background())
	ap.NotifyPods(ctx, func(pod *v1.Pod) { ap.mu.Lock(); ap.seen = append(ap.seen, pod); ap.mu.Unlock() })
	done := make(chan struct{})
	go func() { _ = ap.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ap.Ready():
	case <-time.After(framework.WaitLimit):
		t.Fatal("the kubernetes provider did not sync with the target")
	}
	return ap
}

// create creates op in the target, retried while the target refuses it
// for a while (a new namespace's default service account not there yet).
func (a *attackProvider) create(t *testing.T, op *v1.Pod) {
	t.Helper()
	framework.Eventually(t, "CreatePod "+op.Name, func() (bool, string) {
		err := a.CreatePod(context.Background(), op)
		return err == nil, fmt.Sprint(err)
	})
}

// notified returns the notifications so far.
func (a *attackProvider) notified() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*v1.Pod(nil), a.seen...)
}

// barrier changes the origin pod's labels through UpdatePod and waits
// until the target's event for it came back: the provider's informer
// handles the target's events in order, so every event before it (the
// tenant's) has been handled.
func (a *attackProvider) barrier(t *testing.T, op *v1.Pod, value string) {
	t.Helper()
	upd := op.DeepCopy()
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels["barrier"] = value
	framework.Eventually(t, "UpdatePod "+value, func() (bool, string) {
		err := a.UpdatePod(context.Background(), upd)
		return err == nil, fmt.Sprint(err)
	})
	framework.Eventually(t, "the target's update "+value+" notified", func() (bool, string) {
		for _, p := range a.notified() {
			if p.UID == op.UID && p.Labels["barrier"] == value {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d notifications", len(a.notified()))
	})
}

// pendingOriginPod creates an origin pod that no node takes (its node
// selector matches none), with the service account token volume the
// API server adds, and returns it as the API has it.
func pendingOriginPod(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	p := testPod(name, "--tcp-port=7000")
	p.Spec.NodeSelector = map[string]string{"gokubelet.io/nowhere": "true"}
	p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	got, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ptrTo[T any](v T) *T { return &v }

// jwtClaims decodes a JWT's claims (no verification: the API server made
// it, the test reads what it bound the token to).
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// A Secret labelled and annotated as a token copy of a virtual node, due
// for renewal and naming another pod and service account, gets no token
// from a renewal; the real copy's token is bound to the origin pod by
// name and UID.
func TestForgedTokenSecretMintsNothing(t *testing.T) {
	node(t)
	ctx := context.Background()
	ns := namespace(t)
	tns := "at-" + ns
	targetNamespaceCleanup(t, client, tns)
	const vn = "vk-attack-token"
	ap := startAttackProvider(t, vn)
	op := pendingOriginPod(t, ns, "web")
	victim := pendingOriginPod(t, ns, "victim")
	ap.create(t, op)
	copies, err := client.CoreV1().Secrets(tns).List(ctx, metav1.ListOptions{LabelSelector: k8sprovider.LabelCopy + "=token"})
	if err != nil || len(copies.Items) != 1 {
		t.Fatalf("token copies in %s: %v %v", tns, copies, err)
	}
	claims := jwtClaims(t, string(copies.Items[0].Data["token"]))
	k8s, _ := claims["kubernetes.io"].(map[string]any)
	pod, _ := k8s["pod"].(map[string]any)
	if pod["name"] != op.Name || pod["uid"] != string(op.UID) {
		t.Errorf("the real token copy is bound to %v, want pod %s uid %s", k8s, op.Name, op.UID)
	}
	forged := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: tns,
		Labels: map[string]string{k8sprovider.LabelNode: vn, k8sprovider.LabelCopy: "token", k8sprovider.LabelOriginUID: ""},
		Annotations: map[string]string{
			k8sprovider.AnnotationOriginNamespace: ns, k8sprovider.AnnotationOriginName: victim.Name,
			"gokubelet.io/token-service-account": "default", "gokubelet.io/token-expiration-seconds": "3600",
			k8sprovider.AnnotationTokenExpiry: time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		}}}
	forged, err = client.CoreV1().Secrets(tns).Create(ctx, forged, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ap.RefreshTokens(ctx)
	got, err := client.CoreV1().Secrets(tns).Get(ctx, "stolen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 0 || got.ResourceVersion != forged.ResourceVersion {
		t.Errorf("the forged token secret was written to: keys %d, resourceVersion %s -> %s", len(got.Data), forged.ResourceVersion, got.ResourceVersion)
	}
}

// A pod in the target namespace labelled and annotated as a virtual
// pod's copy, running with an address of its own, reports no status for
// the origin pod; deleting it fails nothing.
func TestForgedTargetPodSpoofsNoStatus(t *testing.T) {
	real := node(t)
	ctx := context.Background()
	ns := namespace(t)
	tns := "at-" + ns
	targetNamespaceCleanup(t, client, tns)
	dumpOnFailure(t, client, ns, tns)
	const vn = "vk-attack-status"
	ap := startAttackProvider(t, vn)
	op := pendingOriginPod(t, ns, "web")
	ap.create(t, op)
	forged := testPod("evil", "--tcp-port=7000")
	forged.Namespace = tns
	forged.Spec.NodeName = real
	forged.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	forged.Labels = map[string]string{k8sprovider.LabelNode: vn, k8sprovider.LabelOriginUID: string(op.UID)}
	forged.Annotations = map[string]string{k8sprovider.AnnotationOriginNamespace: ns, k8sprovider.AnnotationOriginName: op.Name}
	if _, err := client.CoreV1().Pods(tns).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := waitPod(t, tns, "evil", "Running with an IP", func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" })
	ap.barrier(t, op, "1")
	check := func(when string) {
		t.Helper()
		for _, p := range ap.notified() {
			if p.UID == op.UID && (p.Status.PodIP == evil.Status.PodIP || p.Status.Phase == v1.PodFailed) {
				t.Errorf("%s: notified the origin pod with phase %s ip %s (the forgery's ip %s)", when, p.Status.Phase, p.Status.PodIP, evil.Status.PodIP)
			}
			if p.UID != op.UID {
				t.Errorf("%s: notified a pod the provider did not create: %s/%s uid %s", when, p.Namespace, p.Name, p.UID)
			}
		}
		list, err := ap.ListPods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].UID != op.UID || list[0].Status.PodIP == evil.Status.PodIP {
			t.Errorf("%s: ListPods = %d pods %v", when, len(list), list)
		}
	}
	check("forgery running")
	t.Run("DeletingForgedPodFailsNoOriginPod", func(t *testing.T) {
		if err := client.CoreV1().Pods(tns).Delete(ctx, "evil", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, "the forgery gone", func() (bool, string) {
			_, err := client.CoreV1().Pods(tns).Get(ctx, "evil", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		ap.barrier(t, op, "2")
		check("forgery deleted")
		if _, err := ap.GetPod(ctx, ns, op.Name); err != nil {
			t.Errorf("the origin pod's copy after the forgery's deletion: %v", err)
		}
	})
}

// nodeIdentityKubeconfig writes a kubeconfig for the identity system:node:<name>
// (a client certificate of the cluster CA, as a node's TLS bootstrap
// would get).
func nodeIdentityKubeconfig(t *testing.T, name string) string {
	t.Helper()
	return userKubeconfig(t, "system:node:"+name, "system:nodes")
}

// userKubeconfig writes a kubeconfig for a client certificate of the
// cluster CA naming user and groups.
func userKubeconfig(t *testing.T, user string, groups ...string) string {
	t.Helper()
	cert, err := clusterCA(t).ClientCert(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := framework.RESTConfig(clusterEnv["APISERVER_URL"], cert)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(clusterEnv["CLUSTER_CA_FILE"])
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: clusterEnv["APISERVER_URL"], CertificateAuthorityData: caPEM}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), strings.ReplaceAll(user, ":", "_")+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A virtual node with its own identity system:node:<name> runs a pod
// through the kubernetes provider (its Secret copied, its token minted
// under the Node authorizer and NodeRestriction), and that identity is
// refused what no pod of its node uses: another Secret, another pod's
// token.
func TestVirtualNodeIdentityIsConfined(t *testing.T) {
	node(t)
	ctx := context.Background()
	const vn = "vk-ident"
	kc := nodeIdentityKubeconfig(t, vn)
	setVirtualNode(t, vn, fmt.Sprintf(`- name: %s
  provider: kubernetes
  port: 10264
  kubeconfig: %s
  podSync: {retryBase: 100ms, retryMax: 5s}
  providerConfig: {kubeconfig: %s, namespacePrefix: "id-"}
`, vn, kc, filepath.Join(clusterDir, "admin.kubeconfig")))
	t.Cleanup(func() {
		setVirtualNode(t, vn, "")
		waitNodeGone(t, vn)
	})
	waitNodeReady(t, vn, framework.WaitLimit)
	ns := namespace(t)
	tns := "id-" + ns
	targetNamespaceCleanup(t, client, tns)
	dumpOnFailure(t, client, ns, tns)
	for _, name := range []string{"used", "unused"} {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"k": name}}
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := pendingOriginPod(t, ns, "elsewhere")
	p := testPod("confined", "--tcp-port=7000")
	p.Spec.NodeName = vn
	p.Spec.Tolerations = []v1.Toleration{{Key: "virtual-kubelet.io/provider", Operator: v1.TolerationOpExists}}
	p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "USED", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "used"}, Key: "k"}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "confined", "Running on "+vn, running)
	copies, err := client.CoreV1().Secrets(tns).List(ctx, metav1.ListOptions{LabelSelector: k8sprovider.LabelNode + "=" + vn})
	if err != nil || len(copies.Items) != 2 {
		t.Errorf("copies in %s (the secret and the token): %v %v", tns, copies, err)
	}

	nodeClient := vnClient(t, kc)
	if _, err := nodeClient.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{}); err != nil {
		t.Errorf("the node reading a Secret its pod uses: %v", err)
	}
	if _, err := nodeClient.CoreV1().Secrets(ns).Get(ctx, "unused", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node reading a Secret no pod of it uses: %v, want 403 Forbidden", err)
	}
	exp := int64(600)
	_, err = nodeClient.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: other.Name, UID: other.UID},
	}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the node requesting a token for a pod not bound to it: %v, want 403 Forbidden", err)
	}
}

// A virtual node with identity: bootstrap obtains system:node:<name> by a
// CSR made with the virtual nodes' identity, runs a pod through the
// kubernetes provider under it (its Secret copied and its token minted as
// the Node authorizer and NodeRestriction allow a node), and its
// certificate is refused a Secret no pod of the node uses.
func TestVirtualNodeBootstrapsItsOwnIdentity(t *testing.T) {
	node(t)
	ctx := context.Background()
	const vn = "vk-boot"
	setVirtualNode(t, vn, fmt.Sprintf(`- name: %s
  provider: kubernetes
  port: 10265
  identity: bootstrap
  podSync: {retryBase: 100ms, retryMax: 5s}
  providerConfig: {kubeconfig: %s, namespacePrefix: "bt-"}
`, vn, filepath.Join(clusterDir, "admin.kubeconfig")))
	t.Cleanup(func() {
		setVirtualNode(t, vn, "")
		waitNodeGone(t, vn)
	})
	waitNodeReady(t, vn, framework.WaitLimit)
	csrs, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range csrs.Items {
		if r.Spec.Username == virtualNodesUser && r.Spec.SignerName == "kubernetes.io/kube-apiserver-client-kubelet" && approved(&r) {
			if blk, _ := pem.Decode(r.Spec.Request); blk != nil {
				if req, err := x509.ParseCertificateRequest(blk.Bytes); err == nil && req.Subject.CommonName == "system:node:"+vn {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("no approved CSR for system:node:%s made by the virtual nodes' identity (%d CSRs)", vn, len(csrs.Items))
	}
	pemPath := filepath.Join(rootDir, "virtual-nodes", "nodes", vn, "identity", "pki", "kubelet-client-current.pem")
	if c := readPEMCert(t, pemPath); c.Subject.CommonName != "system:node:"+vn {
		t.Errorf("the node's certificate is for %q", c.Subject.CommonName)
	}

	ns := namespace(t)
	tns := "bt-" + ns
	targetNamespaceCleanup(t, client, tns)
	dumpOnFailure(t, client, ns, tns)
	runSecretEnvPod(t, ns, "own-identity", vn, "used", "unused")

	pair, err := tls.LoadX509KeyPair(pemPath, pemPath)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := framework.RESTConfig(clusterEnv["APISERVER_URL"], pair)
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodeClient.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{}); err != nil {
		t.Errorf("the node reading a Secret its pod uses: %v", err)
	}
	if _, err := nodeClient.CoreV1().Secrets(ns).Get(ctx, "unused", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node reading a Secret no pod of it uses: %v, want 403 Forbidden", err)
	}
}

// With nothing but the shipped least-privileged RBAC
// (hack/virtual-nodes-rbac.yaml) for the file's identity, a process of
// virtual nodes in the default mode (each obtains system:node:<name>)
// registers its node and runs a pod whose environment reads a Secret.
// Taken out of the file, the node is drained but its Node stays (no
// kubelet's rights include deleting Nodes), and the log says why.
func TestVirtualNodesRunWithLeastPrivilege(t *testing.T) {
	node(t)
	ctx := context.Background()
	const user, vn = "gokubelet:vn-least", "vk-least"
	kc := userKubeconfig(t, user)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gokubelet:virtual-nodes"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
		_ = client.CoreV1().Nodes().Delete(context.Background(), vn, metav1.DeleteOptions{})
	})

	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "vn.yaml")
	head := fmt.Sprintf("apiVersion: gokubelet.io/v1alpha1\nkind: VirtualNodes\nkubeconfig: %s\nrealNode: false\ninstance: e2e-least\n", kc)
	if err := os.WriteFile(cfg, []byte(head+fmt.Sprintf(`nodes:
- name: %s
  provider: mock
  port: %d
  providerConfig: {startDelay: 100ms}
`, vn, framework.FreePort(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "root")
	k := startVirtualOnlyKubelet(t, "the least-privileged kubelet", kc, cfg, root)
	waitNodeReady(t, vn, framework.WaitLimit)
	pemPath := filepath.Join(root, "virtual-nodes", "nodes", vn, "identity", "pki", "kubelet-client-current.pem")
	if c := readPEMCert(t, pemPath); c.Subject.CommonName != "system:node:"+vn {
		t.Errorf("the node's certificate is for %q, want its own identity by default", c.Subject.CommonName)
	}

	ns := namespace(t)
	dumpOnFailure(t, client, ns)
	runSecretEnvPod(t, ns, "least", vn, "used")

	if err := os.WriteFile(cfg, []byte(head+"nodes: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "the kubelet saying the removed node's Node stays", func() (bool, string) {
		return strings.Contains(k.Log(), "stays registered: the virtual nodes' identity may not delete Nodes"), "no such log line"
	})
	if _, err := client.CoreV1().Nodes().Get(ctx, vn, metav1.GetOptions{}); err != nil {
		t.Errorf("the removed node's Node: %v, want it left in place", err)
	}
}

// runSecretEnvPod creates the Secrets named in ns (key k) and a pod bound
// to virtual node vn whose environment reads the first, and waits until
// the pod runs there.
func runSecretEnvPod(t *testing.T, ns, name, vn string, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	for _, sn := range secrets {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sn, Namespace: ns}, StringData: map[string]string{"k": sn}}
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := testPod(name, "--tcp-port=7000")
	p.Spec.NodeName = vn
	p.Spec.Tolerations = []v1.Toleration{{Key: "virtual-kubelet.io/provider", Operator: v1.TolerationOpExists}}
	p.Spec.TerminationGracePeriodSeconds = ptrTo(int64(1))
	p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "USED", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: secrets[0]}, Key: "k"}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, name, "Running on "+vn, running)
}

// startVirtualOnlyKubelet starts a second kubelet process running the
// virtual nodes of cfg with kubeconfig, stopped when the test ends (its
// log, named by what, kept if the test failed: framework.LogOnFailure).
func startVirtualOnlyKubelet(t *testing.T, what, kubeconfig, cfg, root string) *framework.Kubelet {
	t.Helper()
	k := &framework.Kubelet{Bin: kubeletBin}
	k.HealthzPort = framework.FreePort(t)
	k.Args = []string{"--kubeconfig", kubeconfig, "--virtual-nodes-config", cfg, "--root-dir", root,
		"--healthz-port", fmt.Sprint(k.HealthzPort), "--node-ip", clusterEnv["NODE_IP"], "-v", "2"}
	k.Start(t)
	t.Cleanup(func() {
		framework.LogOnFailure(t, what, k.Log())
		k.Stop(t)
	})
	return k
}

// followFirstLine runs kubectl logs -f on the pod until a line containing
// want arrives, and checks that the follow is still open then (it streams
// rather than ending with the log so far).
func followFirstLine(t *testing.T, ns, pod, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), framework.WaitLimit)
	defer cancel()
	follow := kubectlCmd(ctx, nil, ns, "logs", "-f", pod)
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			// Still following: no end of stream within a second.
			ended := make(chan struct{})
			go func() {
				for sc.Scan() {
				}
				close(ended)
			}()
			select {
			case <-ended:
				t.Errorf("kubectl logs -f %s ended after the log so far", pod)
			case <-time.After(time.Second):
			}
			return
		}
	}
	t.Errorf("kubectl logs -f %s: no line with %q (%v)", pod, want, sc.Err())
}
