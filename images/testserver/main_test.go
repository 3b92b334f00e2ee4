package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type fixture struct {
	srv   *httptest.Server
	dir   string
	mu    sync.Mutex
	lines []string
	exits chan int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), exits: make(chan int, 1)}
	cfg := config{
		unhealthyFile: filepath.Join(f.dir, "unhealthy"),
		unreadyFile:   filepath.Join(f.dir, "unready"),
		exit:          func(code int) { f.exits <- code },
		logf: func(format string, args ...any) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.lines = append(f.lines, format)
		},
	}
	f.srv = httptest.NewServer(newHandler(cfg))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthzFollowsFlagFile(t *testing.T) {
	f := newFixture(t)
	if code, body := f.get(t, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("healthy: got %d %q", code, body)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "unhealthy"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := f.get(t, "/healthz"); code != 500 {
		t.Fatalf("unhealthy: got %d, want 500", code)
	}
	os.Remove(filepath.Join(f.dir, "unhealthy"))
	if code, _ := f.get(t, "/healthz"); code != 200 {
		t.Fatalf("healthy again: got %d", code)
	}
}

func TestReadyzFollowsFlagFile(t *testing.T) {
	f := newFixture(t)
	if code, _ := f.get(t, "/readyz"); code != 200 {
		t.Fatalf("ready: got %d", code)
	}
	os.WriteFile(filepath.Join(f.dir, "unready"), nil, 0o644)
	if code, _ := f.get(t, "/readyz"); code != 503 {
		t.Fatalf("unready: got %d, want 503", code)
	}
}

func TestStatus(t *testing.T) {
	f := newFixture(t)
	for _, c := range []int{200, 204, 404, 418, 503} {
		code, _ := f.get(t, "/status/"+strconv.Itoa(c))
		if code != c {
			t.Errorf("/status/%d: got %d", c, code)
		}
	}
	if code, _ := f.get(t, "/status/abc"); code != 400 {
		t.Errorf("/status/abc: got %d, want 400", code)
	}
}

func TestHostnameAndEnv(t *testing.T) {
	f := newFixture(t)
	want, _ := os.Hostname()
	if code, body := f.get(t, "/hostname"); code != 200 || strings.TrimSpace(body) != want {
		t.Errorf("/hostname: got %d %q, want %q", code, body, want)
	}
	t.Setenv("TESTSERVER_PROBE", "x=y")
	if code, body := f.get(t, "/env"); code != 200 || !strings.Contains(body, "TESTSERVER_PROBE=x=y\n") {
		t.Errorf("/env: got %d, body lacks the variable:\n%s", code, body)
	}
}

func TestExit(t *testing.T) {
	f := newFixture(t)
	if code, body := f.get(t, "/exit/3"); code != 200 || !strings.Contains(body, "exiting 3") {
		t.Fatalf("/exit/3: got %d %q", code, body)
	}
	select {
	case c := <-f.exits:
		if c != 3 {
			t.Fatalf("exit code %d, want 3", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exit not called")
	}
	if code, _ := f.get(t, "/exit/999"); code != 400 {
		t.Fatalf("/exit/999: got %d, want 400", code)
	}
}

func TestOneLogLinePerRequest(t *testing.T) {
	f := newFixture(t)
	f.get(t, "/healthz")
	f.get(t, "/status/404")
	f.get(t, "/nope")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.lines) != 3 {
		t.Fatalf("got %d log lines, want 3: %q", len(f.lines), f.lines)
	}
}

func TestEcho(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveEcho(ln, log.New(io.Discard, "", 0))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "hello\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("echo: got %q, %v", line, err)
	}
}

func TestFetchVerifiesTheCAAndSendsTheToken(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s", r.Method, b)
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)

	var out strings.Builder
	if err := fetch(fetchConfig{url: srv.URL, caFile: ca, tokenFile: tok, postBody: `{"a":1}`, timeout: 5 * time.Second}, &out); err != nil || out.String() != `POST {"a":1}` {
		t.Fatalf("fetch: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := fetch(fetchConfig{url: srv.URL, caFile: ca, timeout: 5 * time.Second}, &out); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without the token: %v", err)
	}
	// A server the CA did not sign is refused.
	other := filepath.Join(dir, "other.crt")
	os.WriteFile(other, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(t)}), 0o644)
	if err := fetch(fetchConfig{url: srv.URL, caFile: other, tokenFile: tok, timeout: 5 * time.Second}, &out); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("wrong CA: %v", err)
	}
}

// selfSigned returns a new CA certificate (DER) that signed nothing.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
