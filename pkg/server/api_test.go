package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"
)

// lookup is a fake PodLookup.
type lookup struct {
	PodSource
	pods map[string]*v1.Pod
}

func (l lookup) GetPodByName(ns, name string) (*v1.Pod, bool) {
	p, ok := l.pods[ns+"/"+name]
	return p, ok
}

func lookupOf(src PodSource, pods ...*v1.Pod) lookup {
	l := lookup{PodSource: src, pods: map[string]*v1.Pod{}}
	for _, p := range pods {
		l.pods[p.Namespace+"/"+p.Name] = p
	}
	return l
}

// allowAll builds the secured handler with everyone allowed in as "tester".
func allowAll(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	cfg.Auth = &Auth{
		Authenticator: authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: &user.DefaultInfo{Name: "tester"}}, true, nil
		}),
		Authorizer: authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionAllow, "", nil
		}),
	}
	h, err := NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func do(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestParsePath(t *testing.T) {
	routes := sortRoutes([]Route{
		{Path: "/stats/", Subresource: "stats", Handler: http.NotFoundHandler()},
		{Path: "/metrics", Subresource: "metrics", Handler: http.NotFoundHandler()},
		{Path: "/metrics/cadvisor", Subresource: "metrics", Handler: http.NotFoundHandler()},
	})
	for _, tc := range []struct {
		path string
		want target
		// route is the Path of the matched route.
		route string
		ok    bool
	}{
		{path: "/healthz", want: target{ep: epHealthz}, ok: true},
		{path: "/healthz/syncloop", want: target{ep: epHealthz, rest: "syncloop"}, ok: true},
		{path: "/healthz/a/b", ok: false},
		{path: "/pods", want: target{ep: epPods}, ok: true},
		{path: "/pods/", want: target{ep: epPods}, ok: true},
		{path: "/pods/x", ok: false},
		{path: "/podsx", ok: false},
		{path: "/runningpods/", want: target{ep: epRunningPods}, ok: true},
		{path: "/runningpods", want: target{ep: epRunningPods}, ok: true},
		{path: "/containerLogs/ns/pod/c", want: target{ep: epContainerLogs, namespace: "ns", pod: "pod", container: "c"}, ok: true},
		{path: "/containerLogs/ns/pod", ok: false},
		{path: "/containerLogs/ns/pod/c/extra", ok: false},
		{path: "/containerLogs/ns//c", ok: false},
		{path: "/containerLogs/../pod/c", ok: false},
		{path: "/exec/ns/pod/c", want: target{ep: epExec, namespace: "ns", pod: "pod", container: "c"}, ok: true},
		{path: "/exec/ns/pod/uid-1/c", want: target{ep: epExec, namespace: "ns", pod: "pod", uid: "uid-1", container: "c"}, ok: true},
		{path: "/exec/ns/pod", ok: false},
		{path: "/exec/ns/pod/uid/c/x", ok: false},
		{path: "/attach/ns/pod/c", want: target{ep: epAttach, namespace: "ns", pod: "pod", container: "c"}, ok: true},
		{path: "/attach/ns/pod/u/c", want: target{ep: epAttach, namespace: "ns", pod: "pod", uid: "u", container: "c"}, ok: true},
		{path: "/attach/ns/./c", ok: false},
		{path: "/run/ns/pod/c", want: target{ep: epRun, namespace: "ns", pod: "pod", container: "c"}, ok: true},
		{path: "/run/ns/pod/u/c", want: target{ep: epRun, namespace: "ns", pod: "pod", uid: "u", container: "c"}, ok: true},
		{path: "/run/ns", ok: false},
		{path: "/portForward/ns/pod", want: target{ep: epPortForward, namespace: "ns", pod: "pod"}, ok: true},
		{path: "/portForward/ns/pod/u", want: target{ep: epPortForward, namespace: "ns", pod: "pod", uid: "u"}, ok: true},
		{path: "/portForward/ns", ok: false},
		{path: "/portForward/ns/pod/u/x", ok: false},
		{path: "/portforward/ns/pod", ok: false},
		{path: "/logs/", want: target{ep: epLogs}, ok: true},
		{path: "/logs", want: target{ep: epLogs}, ok: true},
		{path: "/logs/pods/x.log", want: target{ep: epLogs, rest: "pods/x.log"}, ok: true},
		{path: "/configz", want: target{ep: epConfigz}, ok: true},
		{path: "/configz/x", ok: false},
		{path: "/debug/pprof/", want: target{ep: epPprof}, ok: true},
		{path: "/debug/pprof", want: target{ep: epPprof}, ok: true},
		{path: "/debug/pprof/heap", want: target{ep: epPprof, rest: "heap"}, ok: true},
		{path: "/debug/flags/v", want: target{ep: epDebugFlags}, ok: true},
		{path: "/debug/other", ok: false},
		{path: "/stats/summary", want: target{ep: epRoute, rest: "summary"}, route: "/stats/", ok: true},
		{path: "/stats", want: target{ep: epRoute}, route: "/stats/", ok: true},
		{path: "/metrics", want: target{ep: epRoute}, route: "/metrics", ok: true},
		{path: "/metrics/cadvisor", want: target{ep: epRoute}, route: "/metrics/cadvisor", ok: true},
		{path: "/metrics/resource", want: target{ep: epRoute, rest: "resource"}, route: "/metrics", ok: true},
		{path: "/metricsx", ok: false},
		{path: "/", ok: false},
		{path: "", ok: false},
		{path: "relative/pods", ok: false},
	} {
		got, err := parsePath(tc.path, routes)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.path, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		route := ""
		if got.route != nil {
			route = got.route.Path
		}
		got.route = nil
		if !reflect.DeepEqual(got, tc.want) || route != tc.route {
			t.Errorf("%q: got %+v (route %q), want %+v (route %q)", tc.path, got, route, tc.want, tc.route)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/exec/a/b/c", "/portForward/a/b/u", "/logs/../x", "/containerLogs/a/b/c", "/healthz/x", "/stats/summary"} {
		f.Add(s)
	}
	routes := sortRoutes([]Route{{Path: "/stats/", Subresource: "stats", Handler: http.NotFoundHandler()}})
	f.Fuzz(func(t *testing.T, p string) {
		got, err := parsePath(p, routes)
		if err != nil {
			return
		}
		for _, s := range []string{got.namespace, got.pod, got.container, got.uid} {
			if strings.Contains(s, "/") || s == "." || s == ".." {
				t.Fatalf("%q: parameter %q escapes its segment", p, s)
			}
		}
		switch got.ep {
		case epContainerLogs, epExec, epAttach, epRun:
			if got.namespace == "" || got.pod == "" || got.container == "" {
				t.Fatalf("%q: empty parameter in %+v", p, got)
			}
		case epPortForward:
			if got.namespace == "" || got.pod == "" {
				t.Fatalf("%q: empty parameter in %+v", p, got)
			}
		}
		if !strings.HasPrefix(p, "/") {
			t.Fatalf("%q: a relative path was accepted", p)
		}
	})
}

func TestSubresources(t *testing.T) {
	routes := []Route{{Path: "/custom/", Subresource: "custom"}}
	for _, tc := range []struct {
		path        string
		fineGrained []string
		coarse      []string
	}{
		{"/pods", []string{"pods", "proxy"}, []string{"proxy"}},
		{"/pods/", []string{"pods", "proxy"}, []string{"proxy"}},
		{"/runningpods/", []string{"pods", "proxy"}, []string{"proxy"}},
		{"/healthz", []string{"healthz", "proxy"}, []string{"proxy"}},
		{"/healthz/syncloop", []string{"healthz", "proxy"}, []string{"proxy"}},
		{"/configz", []string{"configz", "proxy"}, []string{"proxy"}},
		{"/stats/summary", []string{"stats"}, []string{"stats"}},
		{"/stats", []string{"stats"}, []string{"stats"}},
		{"/metrics", []string{"metrics"}, []string{"metrics"}},
		{"/metrics/cadvisor", []string{"metrics"}, []string{"metrics"}},
		{"/logs/", []string{"log"}, []string{"log"}},
		{"/logs/syslog", []string{"log"}, []string{"log"}},
		{"/checkpoint/ns/p/c", []string{"checkpoint"}, []string{"checkpoint"}},
		{"/statusz", []string{"statusz"}, []string{"statusz"}},
		{"/flagz", []string{"configz"}, []string{"configz"}},
		{"/containerLogs/ns/p/c", []string{"proxy"}, []string{"proxy"}},
		{"/exec/ns/p/c", []string{"proxy"}, []string{"proxy"}},
		{"/attach/ns/p/c", []string{"proxy"}, []string{"proxy"}},
		{"/portForward/ns/p", []string{"proxy"}, []string{"proxy"}},
		{"/run/ns/p/c", []string{"proxy"}, []string{"proxy"}},
		{"/debug/pprof/", []string{"proxy"}, []string{"proxy"}},
		{"/custom/x", []string{"custom"}, []string{"custom"}},
		{"/podsx", []string{"proxy"}, []string{"proxy"}},
		{"/metricsx", []string{"proxy"}, []string{"proxy"}},
	} {
		if got := Subresources(tc.path, routes, true); !reflect.DeepEqual(got, tc.fineGrained) {
			t.Errorf("%s fine-grained: %v want %v", tc.path, got, tc.fineGrained)
		}
		if got := Subresources(tc.path, routes, false); !reflect.DeepEqual(got, tc.coarse) {
			t.Errorf("%s: %v want %v", tc.path, got, tc.coarse)
		}
	}
	// The attributes carry the node, the verb and the path.
	r := httptest.NewRequest(http.MethodPost, "/exec/ns/p/c?command=ls", nil)
	attrs := RequestAttributes("node-1", &user.DefaultInfo{Name: "u"}, r, nil, true)
	a := attrs[0]
	if len(attrs) != 1 || a.GetVerb() != "create" || a.GetResource() != "nodes" || a.GetName() != "node-1" || a.GetSubresource() != "proxy" ||
		!a.IsResourceRequest() || a.GetAPIVersion() != "v1" || a.GetPath() != "/exec/ns/p/c" || a.GetUser().GetName() != "u" {
		t.Errorf("attributes %+v", attrs)
	}
	for method, verb := range map[string]string{"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "HEAD": ""} {
		if got := RequestAttributes("n", &user.DefaultInfo{}, httptest.NewRequest(method, "/pods", nil), nil, true)[0].GetVerb(); got != verb {
			t.Errorf("%s: verb %q want %q", method, got, verb)
		}
	}
}

// recordingAuthz allows the subresources in allow, for user "good" only,
// and records what it was asked.
type recordingAuthz struct {
	allow map[string]bool
	asked []string
	err   error
}

func (a *recordingAuthz) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.asked = append(a.asked, attrs.GetUser().GetName()+":"+attrs.GetVerb()+":"+attrs.GetSubresource())
	if a.err != nil {
		return authorizer.DecisionNoOpinion, "", a.err
	}
	if attrs.GetUser().GetName() == "good" && a.allow[attrs.GetSubresource()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize and EvaluateConditions complete
// authorizer.Authorizer the way a conditions-unaware authorizer must.
func (a *recordingAuthz) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

func (a *recordingAuthz) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// tokenAuthn accepts "Bearer good" and "Bearer bad".
var tokenAuthn = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer good":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "good"}}, true, nil
	case "Bearer bad":
		return &authenticator.Response{User: &user.DefaultInfo{Name: "bad"}}, true, nil
	case "Bearer broken":
		return nil, false, errors.New("token review failed")
	}
	return nil, false, nil
})

func TestAuthFilter(t *testing.T) {
	src := &fakeSource{pods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "secret-pod", Namespace: "ns"}}}}
	var seenAuthHeader string
	authz := &recordingAuthz{allow: map[string]bool{"proxy": true}}
	h, err := NewHandler(Config{
		NodeName: "node-1", Pods: lookupOf(src), Auth: &Auth{Authenticator: tokenAuthn, Authorizer: authz}, FineGrainedAuthz: true,
		Routes: []Route{{Path: "/custom", Subresource: "custom", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seenAuthHeader = r.Header.Get("Authorization")
			u, _ := UserFrom(r.Context())
			fmt.Fprintf(w, "hello %s", u.GetName())
		})}},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(token, path string) (int, string) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	// No credentials, unknown ones, or a failing authenticator: 401 with
	// nothing about the node.
	for _, tok := range []string{"", "unknown", "broken"} {
		code, body := call(tok, "/pods")
		if code != 401 || strings.TrimSpace(body) != "Unauthorized" {
			t.Errorf("token %q: %d %q", tok, code, body)
		}
	}
	if len(authz.asked) != 0 {
		t.Errorf("the authorizer was asked about unauthenticated requests: %v", authz.asked)
	}
	// Authenticated without the permission: 403 naming the caller and
	// the attributes, and never the pods.
	code, body := call("bad", "/pods")
	if code != 403 || !strings.Contains(body, "user=bad") || !strings.Contains(body, "subresource(s)=[pods proxy]") || strings.Contains(body, "secret-pod") {
		t.Errorf("forbidden: %d %q", code, body)
	}
	// Fine-grained: pods is asked first, proxy allows.
	authz.asked = nil
	code, body = call("good", "/pods")
	if code != 200 || !strings.Contains(body, "secret-pod") {
		t.Errorf("allowed: %d %q", code, body)
	}
	if want := []string{"good:get:pods", "good:get:proxy"}; !reflect.DeepEqual(authz.asked, want) {
		t.Errorf("asked %v, want %v", authz.asked, want)
	}
	// The fine-grained subresource alone is enough.
	authz.allow = map[string]bool{"pods": true}
	authz.asked = nil
	if code, _ := call("good", "/pods"); code != 200 || !reflect.DeepEqual(authz.asked, []string{"good:get:pods"}) {
		t.Errorf("pods only: %d, asked %v", code, authz.asked)
	}
	// ... but not for exec, which needs proxy.
	if code, _ := call("good", "/exec/ns/secret-pod/c?command=ls"); code != 403 {
		t.Errorf("exec with pods only: %d", code)
	}
	// An extra route is authorized by its own subresource and sees the
	// user but not the credentials.
	authz.allow = map[string]bool{"custom": true}
	code, body = call("good", "/custom")
	if code != 200 || body != "hello good" || seenAuthHeader != "" {
		t.Errorf("route: %d %q, auth header passed on: %q", code, body, seenAuthHeader)
	}
	// An authorizer error is a 500.
	authz.err = errors.New("SAR failed")
	if code, _ := call("good", "/custom"); code != 500 {
		t.Errorf("authorizer error: %d", code)
	}
}

func TestRouteValidation(t *testing.T) {
	h := http.NotFoundHandler()
	for _, tc := range []struct {
		routes []Route
		ok     bool
	}{
		{[]Route{{Path: "/stats/", Subresource: "stats", Handler: h}, {Path: "/metrics", Subresource: "metrics", Handler: h}}, true},
		{[]Route{{Path: "stats", Subresource: "stats", Handler: h}}, false},
		{[]Route{{Path: "/", Subresource: "x", Handler: h}}, false},
		{[]Route{{Path: "/a/../b", Subresource: "x", Handler: h}}, false},
		{[]Route{{Path: "/x", Subresource: "", Handler: h}}, false},
		{[]Route{{Path: "/x", Subresource: "a/b", Handler: h}}, false},
		{[]Route{{Path: "/x", Subresource: "x"}}, false},
		{[]Route{{Path: "/x", Subresource: "x", Handler: h}, {Path: "/x/", Subresource: "x", Handler: h}}, false},
		{[]Route{{Path: "/pods/extra", Subresource: "x", Handler: h}}, false},
		{[]Route{{Path: "/exec", Subresource: "x", Handler: h}}, false},
		{[]Route{{Path: "/debug/stats", Subresource: "x", Handler: h}}, false},
	} {
		if err := validateRoutes(tc.routes); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.routes, err, tc.ok)
		}
	}
}

func TestReadOnlyServesItsSubsetAndRoutes(t *testing.T) {
	src := &fakeSource{}
	routes := []Route{
		{Path: "/stats/", Subresource: "stats", ReadOnly: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "stats") })},
		{Path: "/secret", Subresource: "secret", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret") })},
	}
	ro, err := ReadOnlyHandler(src, routes, HealthCheck{Name: "x", Check: func() error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/healthz": 200, "/pods": 200, "/stats/summary": 200,
		"/secret": 404, "/configz": 404, "/debug/flags/v": 404,
		"/runningpods/": 405, "/containerLogs/a/b/c": 405, "/logs/": 405, "/debug/pprof/": 405,
	} {
		if code, body := do(t, ro, http.MethodGet, path); code != want {
			t.Errorf("%s: %d %q, want %d", path, code, body, want)
		}
	}
	for path, want := range map[string]int{"/exec/a/b/c": 405, "/run/a/b/c": 405, "/portForward/a/b": 405} {
		if code, _ := do(t, ro, http.MethodPost, path); code != want {
			t.Errorf("POST %s: %d, want %d", path, code, want)
		}
	}
}

func TestDebuggingHandlersOff(t *testing.T) {
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: false})
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/containerLogs/a/b/c", 405}, {"POST", "/exec/a/b/c", 405}, {"POST", "/attach/a/b/c", 405},
		{"POST", "/portForward/a/b", 405}, {"POST", "/run/a/b/c", 405}, {"GET", "/runningpods/", 405},
		{"GET", "/logs/", 405}, {"GET", "/debug/pprof/", 405}, {"GET", "/configz", 404},
		{"GET", "/pods", 200}, {"GET", "/healthz", 200},
	} {
		if code, body := do(t, h, tc.method, tc.path); code != tc.code {
			t.Errorf("%s %s: %d %q, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
}

func TestMethods(t *testing.T) {
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true, ProfilingHandler: true})
	for _, tc := range []struct {
		method, path string
	}{
		{"POST", "/pods"}, {"DELETE", "/healthz"}, {"POST", "/containerLogs/a/b/c"}, {"GET", "/run/a/b/c"},
		{"PUT", "/exec/a/b/c"}, {"GET", "/debug/flags/v"}, {"DELETE", "/configz"},
	} {
		code, _ := do(t, h, tc.method, tc.path)
		if code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405", tc.method, tc.path, code)
		}
	}
}

func TestConfigzAndHealthz(t *testing.T) {
	type cfg struct {
		Port int `json:"port"`
	}
	h := allowAll(t, Config{
		Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true,
		Configz: func() any { return cfg{Port: 10250} },
		Checks:  []HealthCheck{{Name: "syncloop", Check: func() error { return nil }}, {Name: "pleg", Check: func() error { return errors.New("stale") }}},
	})
	code, body := do(t, h, "GET", "/configz")
	var got map[string]map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &got) != nil || got["kubeletconfig"]["port"] != float64(10250) {
		t.Errorf("/configz: %d %s", code, body)
	}
	// Without a configuration to show (a virtual node), /configz is not found.
	noCfg := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true})
	if code, body := do(t, noCfg, "GET", "/configz"); code != 404 {
		t.Errorf("/configz without a configuration: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", "/healthz"); code != 500 || !strings.Contains(body, "[-]pleg failed") {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := do(t, h, "GET", "/healthz/syncloop"); code != 200 || body != "ok" {
		t.Errorf("/healthz/syncloop: %d %s", code, body)
	}
	if code, _ := do(t, h, "GET", "/healthz/ping"); code != 200 {
		t.Errorf("/healthz/ping: %d", code)
	}
	if code, _ := do(t, h, "GET", "/healthz/nope"); code != 404 {
		t.Errorf("/healthz/nope: %d", code)
	}
}

func TestParseLogOptions(t *testing.T) {
	st := metav1.NewTime(mustTime(t, "2025-03-01T10:00:00Z"))
	for _, tc := range []struct {
		query string
		want  *v1.PodLogOptions
		err   bool
	}{
		{query: "", want: &v1.PodLogOptions{}},
		{query: "follow=true&previous=1&timestamps=yes", want: &v1.PodLogOptions{Follow: true, Previous: true, Timestamps: true}},
		{query: "follow=false&previous=0&timestamps=FALSE", want: &v1.PodLogOptions{}},
		{query: "follow=", want: &v1.PodLogOptions{Follow: true}},
		{query: "tailLines=10&limitBytes=500&sinceSeconds=60", want: &v1.PodLogOptions{TailLines: ptr.To[int64](10), LimitBytes: ptr.To[int64](500), SinceSeconds: ptr.To[int64](60)}},
		{query: "tail=5", want: &v1.PodLogOptions{TailLines: ptr.To[int64](5)}},
		{query: "tail=all&tailLines=3", want: &v1.PodLogOptions{}},
		{query: "sinceTime=2025-03-01T10:00:00Z", want: &v1.PodLogOptions{SinceTime: &st}},
		{query: "stream=Stderr", want: &v1.PodLogOptions{Stream: ptr.To("Stderr")}},
		{query: "tailLines=-1", err: true},
		{query: "tailLines=x", err: true},
		{query: "limitBytes=0", err: true},
		{query: "sinceSeconds=0", err: true},
		{query: "sinceSeconds=5&sinceTime=2025-03-01T10:00:00Z", err: true},
		{query: "sinceTime=yesterday", err: true},
		{query: "stream=Both", err: true},
		{query: "stream=Stdout&tailLines=1", err: true},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseLogOptions(q)
		if tc.err {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", tc.query, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.query, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v want %+v", tc.query, got, tc.want)
		}
	}
}

// fakeContainers records calls and serves canned logs.
type fakeContainers struct {
	logErr  error
	gotOpts *v1.PodLogOptions
	gotName string
	runOut  []byte
	runErr  error
	gotCmd  []string
}

func (f *fakeContainers) ContainerLogs(_ context.Context, p *v1.Pod, c string, o *v1.PodLogOptions) (LogWriter, error) {
	f.gotOpts, f.gotName = o, c
	if f.logErr != nil {
		return nil, f.logErr
	}
	return func(_ context.Context, stdout, stderr io.Writer) error {
		if stdout != nil {
			fmt.Fprint(stdout, "out\n")
		}
		if stderr != nil {
			fmt.Fprint(stderr, "err\n")
		}
		return nil
	}, nil
}
func (f *fakeContainers) GetExec(context.Context, *v1.Pod, string, []string, StreamOptions) (*url.URL, error) {
	return nil, errors.New("not used")
}
func (f *fakeContainers) GetAttach(context.Context, *v1.Pod, string, StreamOptions) (*url.URL, error) {
	return nil, errors.New("not used")
}
func (f *fakeContainers) GetPortForward(context.Context, *v1.Pod, []int32) (*url.URL, error) {
	return nil, errors.New("not used")
}
func (f *fakeContainers) RunInContainer(_ context.Context, _ *v1.Pod, _ string, cmd []string) ([]byte, error) {
	f.gotCmd = cmd
	return f.runOut, f.runErr
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: types.UID("uid-1")},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "main"}},
		},
	}
}

func TestContainerLogsEndpoint(t *testing.T) {
	fc := &fakeContainers{}
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: fc, DebuggingHandlers: true})
	code, body := do(t, h, "GET", "/containerLogs/ns/web/main?tailLines=3&follow=true&timestamps=true")
	if code != 200 || body != "out\nerr\n" {
		t.Errorf("logs: %d %q", code, body)
	}
	if fc.gotName != "main" || fc.gotOpts.TailLines == nil || *fc.gotOpts.TailLines != 3 || !fc.gotOpts.Follow || !fc.gotOpts.Timestamps {
		t.Errorf("options passed: %s %+v", fc.gotName, fc.gotOpts)
	}
	if code, body := do(t, h, "GET", "/containerLogs/ns/web/main?stream=Stderr"); code != 200 || body != "err\n" {
		t.Errorf("stderr only: %d %q", code, body)
	}
	if code, _ := do(t, h, "GET", "/containerLogs/ns/web/init"); code != 200 {
		t.Errorf("init container logs: %d", code)
	}
	for path, want := range map[string]int{
		"/containerLogs/ns/nope/main":            404,
		"/containerLogs/other/web/main":          404,
		"/containerLogs/ns/web/nope":             404,
		"/containerLogs/ns/web/main?tailLines=x": 422,
	} {
		if code, body := do(t, h, "GET", path); code != want {
			t.Errorf("%s: %d %q, want %d", path, code, body, want)
		}
	}
	fc.logErr = errors.New("previous terminated container \"main\" in pod \"web\" not found")
	if code, body := do(t, h, "GET", "/containerLogs/ns/web/main?previous=true"); code != 400 || !strings.Contains(body, "previous terminated container") {
		t.Errorf("no previous: %d %q", code, body)
	}
	fc.logErr = NotFound(errors.New("gone"))
	if code, _ := do(t, h, "GET", "/containerLogs/ns/web/main"); code != 404 {
		t.Errorf("an error marked NotFound: %d", code)
	}
	fc.logErr = errors.New("runtime down")
	if code, _ := do(t, h, "GET", "/containerLogs/ns/web/main"); code != 400 {
		t.Errorf("runtime error: %d", code)
	}
}

func TestRunEndpoint(t *testing.T) {
	fc := &fakeContainers{runOut: []byte("hello\n")}
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}, testPod()), Containers: fc, DebuggingHandlers: true})
	code, body := do(t, h, "POST", "/run/ns/web/main?cmd=echo+hello")
	if code != 200 || body != "hello\n" || !reflect.DeepEqual(fc.gotCmd, []string{"echo", "hello"}) {
		t.Errorf("run: %d %q %v", code, body, fc.gotCmd)
	}
	if code, _ := do(t, h, "POST", "/run/ns/web/uid-1/main?cmd=true"); code != 200 {
		t.Errorf("run with the pod's uid: %d", code)
	}
	if code, _ := do(t, h, "POST", "/run/ns/web/uid-2/main?cmd=true"); code != 404 {
		t.Errorf("run with another uid: %d", code)
	}
	if code, _ := do(t, h, "POST", "/run/ns/web/main"); code != 400 {
		t.Errorf("run without a command: %d", code)
	}
	fc.runErr = errors.New("command terminated with exit code 3")
	if code, body := do(t, h, "POST", "/run/ns/web/main?cmd=false"); code != 500 || !strings.Contains(body, "exit code 3") {
		t.Errorf("failing command: %d %q", code, body)
	}
}

func TestSystemLogsStayInTheirRoot(t *testing.T) {
	root := t.TempDir()
	logDir := filepath.Join(root, "log")
	if err := os.MkdirAll(filepath.Join(logDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logDir, "syslog"), "system log")
	write(filepath.Join(logDir, "sub", "app.log"), "app log")
	write(filepath.Join(root, "secret"), "outside")
	// Symlinks out of the root, absolute and relative; one inside.
	for name, target := range map[string]string{"abs": filepath.Join(root, "secret"), "rel": "../secret", "dir": root, "inside": "sub/app.log"} {
		if err := os.Symlink(target, filepath.Join(logDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true, SystemLogHandler: true, LogDir: logDir})
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/logs/syslog", 200, "system log"},
		{"/logs/sub/app.log", 200, "app log"},
		{"/logs/inside", 200, "app log"},
		{"/logs/", 200, "syslog"},
		{"/logs/abs", 0, ""},
		{"/logs/rel", 0, ""},
		{"/logs/dir/secret", 0, ""},
		{"/logs/../secret", 0, ""},
		{"/logs/sub/../../secret", 0, ""},
		{"/logs/%2e%2e/secret", 0, ""},
		{"/logs/nope", 404, ""},
	} {
		code, body := do(t, h, "GET", tc.path)
		if strings.Contains(body, "outside") {
			t.Errorf("%s: escaped the log directory: %d %q", tc.path, code, body)
			continue
		}
		if tc.code == 0 {
			if code < 400 && code != http.StatusMovedPermanently {
				t.Errorf("%s: %d %q, want a refusal", tc.path, code, body)
			}
			continue
		}
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	off := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true, SystemLogHandler: false, LogDir: logDir})
	if code, _ := do(t, off, "GET", "/logs/syslog"); code != 405 {
		t.Errorf("system log handler off: %d", code)
	}
}

func TestDebugFlagsAndPprof(t *testing.T) {
	h := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true, ProfilingHandler: true, DebugFlagsHandler: true})
	if code, body := do(t, h, "GET", "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %d", code)
	}
	if code, _ := do(t, h, "GET", "/debug/pprof/cmdline"); code != 200 {
		t.Errorf("pprof cmdline: %d", code)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("PUT", "/debug/flags/v", strings.NewReader("x")))
	if rec.Code != 400 {
		t.Errorf("bad verbosity: %d", rec.Code)
	}
	noProf := allowAll(t, Config{Pods: lookupOf(&fakeSource{}), DebuggingHandlers: true})
	if code, _ := do(t, noProf, "GET", "/debug/pprof/"); code != 405 {
		t.Errorf("profiling off: %d", code)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
