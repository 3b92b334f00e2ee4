package url

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
		"\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

// server serves whatever status and body the test sets.
type server struct {
	mu      sync.Mutex
	status  int
	body    string
	headers http.Header
	*httptest.Server
}

func newServer(t *testing.T) *server {
	s := &server{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.headers = r.Header.Clone()
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

type harness struct {
	t       *testing.T
	updates chan podconfig.PodUpdate
	mu      sync.Mutex
	errs    []string
	origins []string
}

func start(t *testing.T, url string, header http.Header) *harness {
	h := &harness{t: t, updates: make(chan podconfig.PodUpdate)}
	s := New(Config{URL: url, Header: header, NodeName: "node1", CheckFrequency: 10 * time.Millisecond,
		OnError: func(u string, err error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.errs = append(h.errs, err.Error())
			h.origins = append(h.origins, u)
		}}, h.updates)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Start(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func (h *harness) next() (string, podconfig.PodUpdate) {
	h.t.Helper()
	select {
	case u := <-h.updates:
		if u.Op != podconfig.SET || u.Source != podspec.SourceHTTP {
			h.t.Fatalf("update %s from %q, want SET from http", u.Op, u.Source)
		}
		var names []string
		for _, p := range u.Pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		return strings.Join(names, ","), u
	case <-time.After(10 * time.Second):
		h.t.Fatal("no update")
	}
	return "", podconfig.PodUpdate{}
}

func (h *harness) none() {
	h.t.Helper()
	select {
	case u := <-h.updates:
		h.t.Fatalf("unexpected update with %d pods", len(u.Pods))
	case <-time.After(80 * time.Millisecond):
	}
}

func (h *harness) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

func TestPollSendsOnChangeOnly(t *testing.T) {
	srv := newServer(t)
	srv.set(http.StatusOK, manifest("web", "img:1"))
	h := start(t, srv.URL+"/pods", http.Header{"Authorization": {"Bearer x"}, "x-extra": {"a", "b"}})

	names, u := h.next()
	if names != "web-node1" {
		t.Fatalf("got %q", names)
	}
	p := u.Pods[0]
	if p.Annotations[podspec.ConfigSourceAnnotation] != "http" || p.Annotations[podspec.ConfigHashAnnotation] != string(p.UID) {
		t.Fatalf("annotations %v", p.Annotations)
	}
	srv.mu.Lock()
	auth, extra := srv.headers.Get("Authorization"), srv.headers.Values("X-Extra")
	srv.mu.Unlock()
	if auth != "Bearer x" || strings.Join(extra, ",") != "a,b" {
		t.Fatalf("headers sent: Authorization %q, X-Extra %v", auth, extra)
	}

	h.none() // same body polled again: nothing

	srv.set(http.StatusOK, "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: c, image: \"img:1\"}]}\n")
	if names, _ := h.next(); names != "a-node1" {
		t.Fatalf("got %q", names)
	}

	srv.set(http.StatusOK, "")
	if names, u := h.next(); names != "" || u.Pods == nil {
		t.Fatalf("empty body gave %q (nil pods: %v), want an empty set", names, u.Pods == nil)
	}
	if errs := h.errors(); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

func TestFailuresKeepLastPods(t *testing.T) {
	srv := newServer(t)
	srv.set(http.StatusOK, manifest("web", "img:1"))
	h := start(t, srv.URL, nil)
	if names, _ := h.next(); names != "web-node1" {
		t.Fatalf("got %q", names)
	}

	srv.set(http.StatusInternalServerError, "boom")
	h.none()
	srv.set(http.StatusOK, manifest("web", `""`))
	h.none()
	errs := h.errors()
	if len(errs) != 2 || !strings.Contains(errs[0], "500") || !strings.Contains(errs[1], "spec.containers[0].image: Required value") {
		t.Fatalf("errors %q: want one 500 and one naming the invalid field, each once", errs)
	}

	srv.set(http.StatusOK, manifest("web", "img:2"))
	if names, _ := h.next(); names != "web-node1" {
		t.Fatalf("got %q", names)
	}
}

func TestNothingSentBeforeFirstValidAnswer(t *testing.T) {
	srv := newServer(t)
	srv.set(http.StatusNotFound, "")
	h := start(t, srv.URL, nil)
	h.none()
	if errs := h.errors(); len(errs) != 1 || !strings.Contains(errs[0], "404") {
		t.Fatalf("errors %q", errs)
	}
	srv.set(http.StatusOK, manifest("web", "img:1"))
	if names, _ := h.next(); names != "web-node1" {
		t.Fatalf("got %q", names)
	}
}
