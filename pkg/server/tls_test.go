package server

import (
	"bytes"
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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

// testCA is a CA that issues server and client certificates for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial int64 = 100

// issue returns a PEM certificate and key for cn (groups as O).
func (ca *testCA) issue(t *testing.T, cn string, groups []string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	// Write then rename, as certificate tools do.
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// serveTLS serves h with the TLS built from o and returns its address.
func serveTLS(t *testing.T, o TLSOptions, h http.Handler) string {
	t.Helper()
	tl, err := BuildTLS(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go tl.Run(ctx)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ServeTLS(ctx, l, h, tl.Config) }()
	return l.Addr().String()
}

func servedSerial(addr string, cfg *tls.Config) (string, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func TestServingCertificateFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "serving-ca")
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c1, k1 := ca.issue(t, "kubelet", nil, true)
	writeFile(t, certFile, c1)
	writeFile(t, keyFile, k1)
	addr := serveTLS(t, TLSOptions{CertFile: certFile, KeyFile: keyFile}, http.NotFoundHandler())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	first, err := servedSerial(addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Rotate the files on disk: the new pair is served without a restart.
	c2, k2 := ca.issue(t, "kubelet", nil, true)
	writeFile(t, keyFile, k2)
	writeFile(t, certFile, c2)
	eventually.Seen(t, "the new certificate served", func() (bool, string) {
		s, err := servedSerial(addr, cfg)
		return err == nil && s != first, fmt.Sprint(s, err)
	})
}

// ReloadKubeletServerCertificateFile off: the files are read once at
// start; a rotated pair on disk is not served, and nothing watches them.
func TestServingCertificateFilesNotReloadedWhenGateOff(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "serving-ca")
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	c1, k1 := ca.issue(t, "kubelet", nil, true)
	writeFile(t, certFile, c1)
	writeFile(t, keyFile, k1)
	tl, err := BuildTLS(TLSOptions{CertFile: certFile, KeyFile: keyFile, StaticCertFile: true})
	if err != nil {
		t.Fatal(err)
	}
	if tl.run != nil {
		t.Error("the certificate files are watched")
	}
	served := func() []byte {
		c, err := tl.Config.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificate[0]
	}
	first := served()
	c2, k2 := ca.issue(t, "kubelet", nil, true)
	writeFile(t, keyFile, k2)
	writeFile(t, certFile, c2)
	if !bytes.Equal(served(), first) {
		t.Error("the rotated pair is served")
	}
}

func TestSelfSignedCertificateIsGeneratedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	addr := serveTLS(t, TLSOptions{CertDir: dir, Host: "node-1"}, http.NotFoundHandler())
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.ConnectionState().PeerCertificates[0]
	c.Close()
	if err := leaf.VerifyHostname("node-1"); err != nil {
		t.Errorf("self-signed certificate is not for the node: %v", err)
	}
	certFile, _ := SelfSignedPaths(dir)
	before, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildTLS(TLSOptions{CertDir: dir, Host: "node-1"}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(certFile)
	if string(before) != string(after) {
		t.Error("the self-signed pair was regenerated although it was usable")
	}
}

func TestTLSVersionsAndCipherSuites(t *testing.T) {
	dir := t.TempDir()
	if _, err := BuildTLS(TLSOptions{CertDir: dir, MinVersion: "VersionTLS14"}); err == nil {
		t.Error("unknown TLS version accepted")
	}
	if _, err := BuildTLS(TLSOptions{CertDir: dir, CipherSuites: []string{"TLS_NOPE"}}); err == nil {
		t.Error("unknown cipher suite accepted")
	}
	tls13 := serveTLS(t, TLSOptions{CertDir: dir, MinVersion: "VersionTLS13"}, http.NotFoundHandler())
	if _, err := servedSerial(tls13, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("TLS 1.2 client accepted with tlsMinVersion VersionTLS13")
	}
	if _, err := servedSerial(tls13, &tls.Config{InsecureSkipVerify: true}); err != nil {
		t.Errorf("TLS 1.3 client refused: %v", err)
	}
	// The self-signed pair is RSA; only the one suite is offered.
	one := serveTLS(t, TLSOptions{CertDir: dir, CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}, http.NotFoundHandler())
	other := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}}
	if _, err := servedSerial(one, other); err == nil {
		t.Error("a cipher suite outside tlsCipherSuites was negotiated")
	}
	same := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	if _, err := servedSerial(one, same); err != nil {
		t.Errorf("the configured suite was refused: %v", err)
	}
}

// whoami answers with the authenticated user.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, _ := UserFrom(r.Context())
	fmt.Fprintf(w, "%s %v", u.GetName(), u.GetGroups())
})

func TestX509AndAnonymousAuthentication(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "client-ca")
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, ca.pem)
	rogue := newTestCA(t, "rogue")

	serve := func(anonymous bool) string {
		auth, err := BuildAuth(AuthOptions{Anonymous: anonymous, ClientCAFile: caFile, AuthzMode: AuthzModeAlwaysAllow})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go auth.Run(ctx)
		h, err := NewHandler(Config{NodeName: "n", Pods: lookupOf(&fakeSource{}), Auth: auth, Routes: []Route{{Path: "/whoami", Subresource: "proxy", Handler: whoami}}})
		if err != nil {
			t.Fatal(err)
		}
		return serveTLS(t, TLSOptions{CertDir: t.TempDir(), RequestClientCert: true}, h)
	}
	get := func(addr string, certPEM, keyPEM []byte) (int, string) {
		cfg := &tls.Config{InsecureSkipVerify: true}
		if certPEM != nil {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
		resp, err := c.Get("https://" + addr + "/whoami")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	secure := serve(false)
	if code, body := get(secure, nil, nil); code != 401 {
		t.Errorf("no certificate: %d %q", code, body)
	}
	goodCert, goodKey := ca.issue(t, "alice", []string{"admins"}, false)
	if code, body := get(secure, goodCert, goodKey); code != 200 || body != "alice [admins system:authenticated]" {
		t.Errorf("client certificate: %d %q", code, body)
	}
	rc, rk := rogue.issue(t, "alice", nil, false)
	if code, body := get(secure, rc, rk); code != 401 {
		t.Errorf("certificate of another CA: %d %q", code, body)
	}
	open := serve(true)
	if code, body := get(open, nil, nil); code != 200 || !strings.HasPrefix(body, "system:anonymous") {
		t.Errorf("anonymous: %d %q", code, body)
	}
}

func TestStandaloneWebhooksCloseTheAPI(t *testing.T) {
	auth, err := BuildAuth(AuthOptions{WebhookAuthn: true, AuthzMode: AuthzModeWebhook})
	if err != nil {
		t.Fatal(err)
	}
	if len(auth.Warnings) != 3 {
		t.Errorf("want a warning for each unusable setting, got %q", auth.Warnings)
	}
	r, _ := http.NewRequest("GET", "/pods", nil)
	if _, ok, _ := auth.Authenticator.AuthenticateRequest(r); ok {
		t.Error("a request without credentials was authenticated")
	}
	d, _, _ := auth.Authorizer.Authorize(context.Background(), authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "x"}})
	if d == authorizer.DecisionAllow {
		t.Error("webhook authorization without an API server allowed a request")
	}
	if _, err := BuildAuth(AuthOptions{AuthzMode: "RBAC"}); err == nil {
		t.Error("unknown authorization mode accepted")
	}
}
