package node

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The watch client talks to the API server over a connection of its own;
// the main client's requests share one.
func TestWatchClientHasItsOwnConnection(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]string{} // node name asked for → client connection
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Base(r.URL.Path)
		mu.Lock()
		conns[name] = r.RemoteAddr
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"Node","apiVersion":"v1","metadata":{"name":%q}}`, name)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL, base64.StdEncoding.EncodeToString(ca))), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClients(ClientConfig{Kubeconfig: kc, QPS: 100, Burst: 100, EventQPS: 100, EventBurst: 100})
	if err != nil {
		t.Fatal(err)
	}
	get := func(cs kubernetes.Interface, name string) {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	get(c.Kube, "kube-1")
	get(c.Kube, "kube-2")
	get(c.Watcher(), "watch-1")
	get(c.Watcher(), "watch-2")
	mu.Lock()
	defer mu.Unlock()
	if conns["kube-1"] != conns["kube-2"] || conns["watch-1"] != conns["watch-2"] {
		t.Fatalf("a client used several connections: %v", conns)
	}
	if conns["kube-1"] == conns["watch-1"] {
		t.Errorf("the watch client shares the main client's connection %s", conns["kube-1"])
	}
}
