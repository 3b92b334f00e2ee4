package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

// issuer signs client certificates for the tests.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &issuer{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (i *issuer) issue(t *testing.T, cn string, notAfter time.Time) (*tls.Certificate, []byte, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.cert, &key.PublicKey, i.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pair.Leaf, _ = x509.ParseCertificate(der)
	return &pair, certPEM, keyPEM
}

// fakeManager hands out whatever certificate the test sets.
type fakeManager struct {
	cur atomic.Pointer[tls.Certificate]
}

func (f *fakeManager) Start()                    {}
func (f *fakeManager) Stop()                     {}
func (f *fakeManager) Current() *tls.Certificate { return f.cur.Load() }
func (f *fakeManager) ServerHealthy() bool       { return true }

func TestRotationSwitchesConnectionsToTheNewCertificate(t *testing.T) {
	iss := newIssuer(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(iss.pem)
	// The server answers with the CN of the client certificate of the
	// connection, which stays open between requests (keep-alive).
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			_, _ = io.WriteString(w, "anonymous")
			return
		}
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()

	m := &fakeManager{}
	c := &Client{manager: m, dialer: connrotation.NewDialer((&net.Dialer{}).DialContext), checkPeriod: 10 * time.Millisecond, exitAfter: time.Hour}
	// The kubeconfig names the store's file, which a bootstrap has not
	// written yet.
	missing := filepath.Join(t.TempDir(), "kubelet-client-current.pem")
	cfg, err := c.rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertFile: missing, KeyFile: missing}})
	if err != nil {
		t.Fatal(err)
	}
	get := func() string { return body(t, cfg, srv.URL) }
	// No certificate yet: the client connects without one.
	if got := get(); got != "anonymous" {
		t.Fatalf("before the first certificate: %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	first, _, _ := iss.issue(t, "first", time.Now().Add(time.Hour))
	m.cur.Store(first)
	eventually.True(t, "the first certificate used", func() bool { return get() == "first" })
	before := conns.Load()
	// The kept-alive connection would go on presenting "first"; the
	// rotation closes it, so the next request uses the new certificate.
	second, _, _ := iss.issue(t, "second", time.Now().Add(time.Hour))
	m.cur.Store(second)
	eventually.True(t, "the rotated certificate used", func() bool { return get() == "second" })
	if conns.Load() == before {
		t.Error("no new connection after the rotation")
	}
}

func TestRunFailsWithoutAValidCertificateWhileTheServerAnswers(t *testing.T) {
	iss := newIssuer(t)
	expired, _, _ := iss.issue(t, "old", time.Now().Add(-time.Minute))
	m := &fakeManager{}
	m.cur.Store(expired)
	c := &Client{manager: m, dialer: connrotation.NewDialer((&net.Dialer{}).DialContext), checkPeriod: 5 * time.Millisecond, exitAfter: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Run(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("Run with an expired certificate: %v (ctx %v)", err, ctx.Err())
	}
}

func TestKubeconfigUsable(t *testing.T) {
	dir := t.TempDir()
	iss := newIssuer(t)
	write := func(name string, certPEM, keyPEM []byte) string {
		pemPath := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(pemPath, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
			t.Fatal(err)
		}
		kc := filepath.Join(dir, name+".kubeconfig")
		if err := writeKubeconfig(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: iss.pem}}, kc, pemPath); err != nil {
			t.Fatal(err)
		}
		return kc
	}
	_, c, k := iss.issue(t, "system:node:a", time.Now().Add(time.Hour))
	valid := write("valid", c, k)
	_, c, k = iss.issue(t, "system:node:a", time.Now().Add(-time.Minute))
	expired := write("expired", c, k)
	if ok, why := kubeconfigUsable(valid); !ok {
		t.Errorf("valid kubeconfig refused: %s", why)
	}
	if ok, why := kubeconfigUsable(expired); ok || why == "" {
		t.Errorf("expired kubeconfig accepted")
	}
	if ok, _ := kubeconfigUsable(filepath.Join(dir, "missing")); ok {
		t.Errorf("missing kubeconfig accepted")
	}
	// The written kubeconfig points at the pair and keeps the CA.
	cfg, err := clientcmd.LoadFromFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if a := cfg.AuthInfos[ctx.AuthInfo]; a.ClientCertificate != filepath.Join(dir, "valid.pem") || a.ClientKey != a.ClientCertificate {
		t.Errorf("credentials: %+v", a)
	}
	if cl := cfg.Clusters[ctx.Cluster]; cl.Server != "https://127.0.0.1:6443" || string(cl.CertificateAuthorityData) != string(iss.pem) {
		t.Errorf("cluster: %+v", cl)
	}
}

func TestCSRNameIsStable(t *testing.T) {
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	subj := &pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	a, _ := csrName(k1.Public(), subj, usages)
	b, _ := csrName(k1.Public(), subj, usages)
	c, _ := csrName(k2.Public(), subj, usages)
	d, _ := csrName(k1.Public(), &pkix.Name{CommonName: "system:node:b", Organization: []string{"system:nodes"}}, usages)
	if a != b || a == c || a == d || len(a) > 63 {
		t.Errorf("names: %s %s %s %s", a, b, c, d)
	}
}

func TestRotationAfterAnExpiredKubeconfigStartsFromTheBootstrap(t *testing.T) {
	dir := t.TempDir()
	iss := newIssuer(t)
	// A bootstrapped kubeconfig whose certificate expired while the
	// kubelet was down, and a bootstrap kubeconfig with a token.
	_, c, k := iss.issue(t, "system:node:a", time.Now().Add(-time.Minute))
	pemPath := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(pemPath, append(c, k...), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: iss.pem}}, kc, pemPath); err != nil {
		t.Fatal(err)
	}
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	if err := os.WriteFile(boot, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := newRotatingClient(ClientOptions{KubeconfigPath: kc, BootstrapKubeconfigPath: boot, CertDir: dir, NodeName: "a", Rotate: true})
	if err != nil {
		t.Fatal(err)
	}
	if cur := cl.Manager().Current(); cur != nil {
		t.Errorf("the expired certificate is still presented (notAfter %v)", cur.Leaf.NotAfter)
	}
}

func TestRotatingBootstrapWritesTheKubeconfigBeforeAnyCertificate(t *testing.T) {
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap.kubeconfig")
	if err := os.WriteFile(boot, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "sub", "kubeconfig")
	cl, err := newRotatingClient(ClientOptions{KubeconfigPath: kc, BootstrapKubeconfigPath: boot, CertDir: filepath.Join(dir, "pki"), NodeName: "a", Rotate: true})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Manager().Current() != nil || cl.Config.BearerToken != "" || cl.Config.Transport == nil {
		t.Errorf("client before the first certificate: %+v", cl.Config)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]; a.ClientCertificate != filepath.Join(dir, "pki", "kubelet-client-current.pem") {
		t.Errorf("kubeconfig credentials: %+v", a)
	}
}

func TestServingAddresses(t *testing.T) {
	tests := []struct {
		name, node, host string
		ips              []string
		wantNames        []string
		wantIPs          []string
	}{
		{"node name only", "n1", "", nil, []string{"n1"}, nil},
		{"hostname differs", "n1", "host.example", []string{"10.0.0.5"}, []string{"n1", "host.example"}, []string{"10.0.0.5"}},
		{"hostname is the node name", "n1", "n1", nil, []string{"n1"}, nil},
		{"unspecified and bad IPs left out", "n1", "", []string{"0.0.0.0", "::", "not-an-ip", "fd00::1"}, []string{"n1"}, []string{"fd00::1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names, ips := ServingAddresses(tc.node, tc.host, tc.ips)
			var gotIPs []string
			for _, ip := range ips {
				gotIPs = append(gotIPs, ip.String())
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.wantNames) || fmt.Sprint(gotIPs) != fmt.Sprint(tc.wantIPs) {
				t.Errorf("got %v %v, want %v %v", names, gotIPs, tc.wantNames, tc.wantIPs)
			}
		})
	}
}

// A rotation whose certificate expires before its CSR is read back (the
// API server away, a slow signer) goes on with the bootstrap credentials,
// not as an anonymous user: client-go's manager stops presenting an
// expired certificate (Current is nil) and waits up to 15 minutes for the
// CSR it made, which happened to a virtual node in an e2e run.
func TestCertificateRequestsWithoutAValidCertificateUseTheBootstrapCredentials(t *testing.T) {
	iss := newIssuer(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(iss.pem)
	// The server answers with who the request authenticated as.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case len(r.TLS.PeerCertificates) > 0:
			_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
		case r.Header.Get("Authorization") != "":
			_, _ = io.WriteString(w, r.Header.Get("Authorization"))
		default:
			_, _ = io.WriteString(w, "anonymous")
		}
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()

	m := &fakeManager{}
	c := &Client{manager: m, dialer: connrotation.NewDialer((&net.Dialer{}).DialContext)}
	rotating, err := c.rotatingConfig(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	csrCfg := c.csrConfig(rotating, &rest.Config{Host: srv.URL, BearerToken: "abcdef.0123456789abcdef", TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	get := func(cfg *rest.Config) string { return body(t, cfg, srv.URL) }
	valid, _, _ := iss.issue(t, "system:node:a", time.Now().Add(time.Hour))
	m.cur.Store(valid)
	if got := get(csrCfg); got != "system:node:a" {
		t.Errorf("with a valid certificate the CSR client authenticated as %q, want the certificate", got)
	}
	m.cur.Store(nil) // expired: client-go's Current() no longer returns it
	if got := get(csrCfg); got != "Bearer abcdef.0123456789abcdef" {
		t.Errorf("without a valid certificate the CSR client authenticated as %q, want the bootstrap token", got)
	}
	m.cur.Store(valid)
	if got := get(csrCfg); got != "system:node:a" {
		t.Errorf("after a new certificate the CSR client authenticated as %q", got)
	}
}

// body GETs url with a client of cfg (its transport, so its connections,
// are cfg's) and returns the response body.
func body(t *testing.T, cfg *rest.Config, url string) string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
