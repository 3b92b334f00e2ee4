package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeSource struct {
	pods, running []*v1.Pod
	err           error
}

func (f *fakeSource) Pods() []*v1.Pod { return f.pods }
func (f *fakeSource) RunningPods(context.Context) ([]*v1.Pod, error) {
	return f.running, f.err
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestHealthz(t *testing.T) {
	healthy := HealthCheck{Name: "syncloop", Check: func() error { return nil }}
	sick := HealthCheck{Name: "pleg", Check: func() error { return errors.New("relist stale") }}
	if code, body := get(t, HealthzHandler(healthy), "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("healthy: %d %q", code, body)
	}
	code, body := get(t, HealthzHandler(healthy, sick), "/healthz")
	if code != 500 || !strings.Contains(body, "[-]pleg failed: relist stale") || !strings.Contains(body, "[+]syncloop ok") {
		t.Fatalf("sick: %d %q", code, body)
	}
}

func TestPodEndpoints(t *testing.T) {
	src := &fakeSource{
		pods:    []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}, Status: v1.PodStatus{Phase: v1.PodRunning}}},
		running: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "kube-system"}}},
	}
	ro, err := ReadOnlyHandler(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The read-only port serves /pods; /runningpods/ is a debugging
	// endpoint (405 there, as upstream) served on the secured API.
	if code, body := get(t, ro, "/runningpods/"); code != http.StatusMethodNotAllowed || !strings.Contains(body, "Debug endpoints are disabled") {
		t.Fatalf("read-only /runningpods/: %d %s", code, body)
	}
	h := allowAll(t, Config{Pods: lookupOf(src), DebuggingHandlers: true})
	for path, want := range map[string]string{"/pods": "a", "/runningpods/": "b"} {
		hh := h
		if path == "/pods" {
			hh = ro
		}
		code, body := get(t, hh, path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		var list v1.PodList
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Name != want {
			t.Fatalf("%s: got %+v", path, list)
		}
	}
	src.err = errors.New("runtime down")
	if code, _ := get(t, h, "/runningpods/"); code != 500 {
		t.Fatalf("runtime error not reported: %d", code)
	}
}
