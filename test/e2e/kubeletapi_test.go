package e2e

// The kubelet API on 10250 called directly (authentication and
// authorization), and the node's certificates: TLS bootstrap, client
// certificate rotation, the serving certificate from a CSR.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/test/framework"
)

// kubeletURL is the node's kubelet API, as the API server reaches it.
func kubeletURL(path string) string { return kubeletURLAt(10250, path) }

// kubeletURLAt is the kubelet API at port of the machine (a virtual
// node's is at its own port).
func kubeletURLAt(port int, path string) string {
	return "https://" + net.JoinHostPort(clusterEnv["NODE_IP"], strconv.Itoa(port)) + path
}

// callKubelet sends a GET to the kubelet API with a bearer token or a
// client certificate (or neither).
func callKubelet(t *testing.T, token string, cert *tls.Certificate, path string) (int, string) {
	t.Helper()
	return callKubeletAt(t, 10250, token, cert, path)
}

// callKubeletAt is callKubelet for the kubelet API at port.
func callKubeletAt(t *testing.T, port int, token string, cert *tls.Certificate, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", kubeletURLAt(port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := framework.APIClient(cert).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func saToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func clusterCA(t *testing.T) *framework.CA {
	t.Helper()
	pki := filepath.Dir(clusterEnv["CLUSTER_CA_FILE"])
	ca, err := framework.LoadCA(filepath.Join(pki, "ca.crt"), filepath.Join(pki, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestKubeletAPIAuthnAndAuthz(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()
	createPod(t, ns, testPod("visible"))
	waitPod(t, ns, "visible", "Running", running)

	// No credentials: 401, and nothing about the node's pods.
	for _, p := range []string{"/pods", "/runningpods/", "/containerLogs/" + ns + "/visible/main", "/configz", "/healthz"} {
		if code, body := callKubelet(t, "", nil, p); code != 401 || strings.Contains(body, "visible") {
			t.Errorf("%s without credentials: %d %q", p, code, body)
		}
	}
	// A ServiceAccount token without nodes/proxy: authenticated by
	// TokenReview, refused by SubjectAccessReview.
	nobody := saToken(t, ns, "nobody")
	code, body := callKubelet(t, nobody, nil, "/pods")
	if code != 403 || !strings.Contains(body, "system:serviceaccount:"+ns+":nobody") || strings.Contains(body, "visible") {
		t.Errorf("token without permission: %d %q", code, body)
	}
	// A client certificate from the cluster CA for a user without
	// permission: 403 as well.
	ca := clusterCA(t)
	stranger, err := ca.ClientCert("e2e-stranger")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := callKubelet(t, "", &stranger, "/pods"); code != 403 || !strings.Contains(body, "user=e2e-stranger") {
		t.Errorf("certificate without permission: %d %q", code, body)
	}
	// The API server's own client certificate: 200, with the pods.
	pki := filepath.Dir(clusterEnv["CLUSTER_CA_FILE"])
	apiserverCert, err := tls.LoadX509KeyPair(filepath.Join(pki, "apiserver-kubelet-client.crt"), filepath.Join(pki, "apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	code, body = callKubelet(t, "", &apiserverCert, "/pods")
	var list v1.PodList
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || !strings.Contains(body, `"name":"visible"`) {
		t.Errorf("authorized certificate: %d %q", code, framework.Tail(body, 2))
	}
	// A ServiceAccount granted nodes/proxy: 200.
	role := "e2e-node-proxy-" + ns
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get", "create"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{}) })
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prober", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	prober := saToken(t, ns, "prober")
	framework.Eventually(t, "the granted ServiceAccount allowed", func() (bool, string) {
		code, body := callKubelet(t, prober, nil, "/pods")
		return code == 200 && strings.Contains(body, `"name":"visible"`), fmt.Sprintf("%d %s", code, framework.Tail(body, 1))
	})
	// ... for the other proxy endpoints too, but not for /logs/ (nodes/log).
	if code, body := callKubelet(t, prober, nil, "/containerLogs/"+ns+"/visible/main"); code != 200 {
		t.Errorf("granted token, container logs: %d %q", code, body)
	}
	if code, _ := callKubelet(t, prober, nil, "/logs/"); code != 403 {
		t.Errorf("granted nodes/proxy only, /logs/: %d, want 403", code)
	}
	// The serving certificate is the cluster's for this node.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	conn, err := tls.Dial("tcp", net.JoinHostPort(clusterEnv["NODE_IP"], "10250"), &tls.Config{RootCAs: pool, ServerName: clusterEnv["NODE_IP"]})
	if err != nil {
		t.Errorf("the serving certificate does not verify for the node IP: %v", err)
	} else {
		conn.Close()
	}
	// And the API server's proxy to the kubelet works with these settings.
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", name, "proxy", "pods").DoRaw(ctx)
	if err != nil || !strings.Contains(string(raw), `"name":"visible"`) {
		t.Errorf("nodes/proxy through the API server: %v %s", err, framework.Tail(string(raw), 1))
	}
}

// readPEMCert parses the first certificate of a PEM file.
func readPEMCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			t.Fatalf("%s holds no certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

func TestNodeJoinedThroughTLSBootstrap(t *testing.T) {
	name := node(t)
	kc, err := clientcmd.LoadFromFile(nodeKubeconfig)
	if err != nil {
		t.Fatalf("the bootstrap did not write --kubeconfig: %v", err)
	}
	pem := filepath.Join(certDir, "kubelet-client-current.pem")
	auth := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	if auth.ClientCertificate != pem || auth.ClientKey != pem || auth.Token != "" {
		t.Errorf("kubeconfig credentials: %+v", auth)
	}
	c := readPEMCert(t, pem)
	if c.Subject.CommonName != "system:node:"+name || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate subject: %v", c.Subject)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(clusterCA(t).CertPEM)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate not issued by the cluster CA for client auth: %v", err)
	}
	// The controller manager approved the bootstrap identity's CSR.
	csrs, err := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range csrs.Items {
		if r.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && strings.HasPrefix(r.Spec.Username, "system:bootstrap:") && approved(&r) && len(r.Status.Certificate) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no approved and issued bootstrap CSR among %d", len(csrs.Items))
	}
	if !strings.Contains(kubelet.Log(), "Bootstrapping a client certificate") && !strings.Contains(kubelet.Log(), "Client certificate available") {
		t.Errorf("the kubelet log does not tell of the bootstrap")
	}
}

func approved(r *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestClientCertificateRotationKeepsPodsRunning(t *testing.T) {
	// Minutes of waiting for the certificate's lifetime, beside the other
	// waiting tests.
	name := parallelOnSharedKubelet(t)
	ns := namespace(t)
	ctx := context.Background()
	createPod(t, ns, testPod("steady"))
	before := waitPod(t, ns, "steady", "Running", running).Status.ContainerStatuses[0].ContainerID
	pem := filepath.Join(certDir, "kubelet-client-current.pem")
	old := readPEMCert(t, pem)
	// Short-lived: the cluster signs for minutes (backdated 5 minutes).
	if life := old.NotAfter.Sub(old.NotBefore); life > 10*time.Minute {
		t.Fatalf("client certificate lives %v; this test needs the e2e cluster's short signing duration", life)
	}
	// Rotation comes at 70–90% of the lifetime.
	framework.EventuallyWithin(t, 8*time.Minute, "a rotated client certificate", func() (bool, string) {
		c := readPEMCert(t, pem)
		return c.SerialNumber.Cmp(old.SerialNumber) != 0, fmt.Sprintf("serial %v, notAfter %v", c.SerialNumber, c.NotAfter)
	})
	// Once the old certificate has expired, only the new one can work.
	waitUntil(old.NotAfter.Add(2 * time.Second))
	framework.Eventually(t, "lease renewed after the old certificate expired", func() (bool, string) {
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(old.NotAfter), fmt.Sprint(err)
	})
	createPod(t, ns, testPod("after"))
	waitPod(t, ns, "after", "Running after the rotation", running)
	p := waitPod(t, ns, "steady", "Running", running)
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != before || cs.RestartCount != 0 {
		t.Errorf("the pod was disturbed by the rotation: %s -> %s, restarts %d", before, cs.ContainerID, cs.RestartCount)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil || !nodeReady(n) {
		t.Errorf("node not Ready after the rotation: %v", err)
	}
	if !strings.Contains(kubelet.Log(), "Client certificate rotated") {
		t.Error("the kubelet log does not tell of the rotation")
	}
}

// restartKubelet restarts the shared kubelet with another configuration
// and arguments until the test ends, then restores it.
func restartKubelet(t *testing.T, config string, args []string) {
	t.Helper()
	origArgs := kubelet.Args
	kubelet.Stop(t)
	if err := os.WriteFile(kubeletConfigPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	kubelet.Args = args
	t.Cleanup(func() {
		kubelet.Stop(t)
		if err := os.WriteFile(kubeletConfigPath, []byte(kubeletConfig), 0o644); err != nil {
			t.Error(err)
		}
		kubelet.Args = origArgs
		kubelet.Start(t)
		node(t)
	})
	kubelet.Start(t)
	node(t)
}

func TestServingCertificateThroughCSR(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	// An administrator approves the node's serving CSRs (the controller
	// manager does not), for as long as the test runs.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go approveServingCSRs(ctx, func(node, user string) bool { return node == name && user == "system:node:"+name })
	restartKubelet(t, kubeletConfig+"serverTLSBootstrap: true\n", kubelet.Args)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(clusterCA(t).CertPEM)
	pkiServing := readPEMCert(t, clusterEnv["KUBELET_TLS_CERT_FILE"])
	framework.Eventually(t, "a CSR-issued serving certificate served", func() (bool, string) {
		conn, err := tls.Dial("tcp", net.JoinHostPort(clusterEnv["NODE_IP"], "10250"), &tls.Config{RootCAs: pool, ServerName: clusterEnv["NODE_IP"]})
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		leaf := conn.ConnectionState().PeerCertificates[0]
		return leaf.Subject.CommonName == "system:node:"+name && leaf.SerialNumber.Cmp(pkiServing.SerialNumber) != 0,
			fmt.Sprintf("%v serial %v", leaf.Subject, leaf.SerialNumber)
	})
	if _, err := os.Stat(filepath.Join(certDir, "kubelet-server-current.pem")); err != nil {
		t.Errorf("serving certificate not stored in --cert-dir: %v", err)
	}
	// The API server still reaches the kubelet.
	createPod(t, ns, restartingShellPod("talker", "echo served; sleep 3600"))
	waitPod(t, ns, "talker", "Running", running)
	framework.Eventually(t, "logs through the API server", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "talker")
		return out == "served\n", out + errs
	})
}

func TestDirectNodeKubeconfigStillWorks(t *testing.T) {
	node(t)
	ns := namespace(t)
	// The node.kubeconfig of hack/cluster.sh, no bootstrap, no rotation.
	var args []string
	for i := 0; i < len(kubelet.Args); i++ {
		switch kubelet.Args[i] {
		case "--bootstrap-kubeconfig", "--kubeconfig", "--cert-dir":
			i++
			continue
		}
		args = append(args, kubelet.Args[i])
	}
	args = append(args, "--kubeconfig", clusterEnv["NODE_KUBECONFIG"])
	restartKubelet(t, strings.Replace(kubeletConfig, "rotateCertificates: true", "rotateCertificates: false", 1), args)
	createPod(t, ns, restartingShellPod("direct", "echo direct; sleep 3600"))
	waitPod(t, ns, "direct", "Running", running)
	framework.Eventually(t, "logs through the API server", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "direct")
		return out == "direct\n", out + errs
	})
}
