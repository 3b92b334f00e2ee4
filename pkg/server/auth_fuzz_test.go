package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// allowedSubresources are the nodes subresources that may authorize a
// request each endpoint serves: nothing weaker than upstream's mapping
// (an exec authorized by nodes/stats would be an escalation).
var allowedSubresources = map[endpoint]map[string]bool{
	epHealthz:       {"healthz": true, "proxy": true},
	epPods:          {"pods": true, "proxy": true},
	epRunningPods:   {"pods": true, "proxy": true},
	epConfigz:       {"configz": true, "proxy": true},
	epContainerLogs: {"proxy": true},
	epExec:          {"proxy": true},
	epAttach:        {"proxy": true},
	epPortForward:   {"proxy": true},
	epRun:           {"proxy": true},
	epPprof:         {"proxy": true},
	epDebugFlags:    {"proxy": true},
	epLogs:          {"log": true},
}

// FuzzAuthorizationMatchesDispatch holds the authorization path mapping
// (request path → SubjectAccessReview attributes) to the dispatcher: the
// attributes a request is authorized by are always those of the handler
// that serves it, for the node, with the verb of the method.
func FuzzAuthorizationMatchesDispatch(f *testing.F) {
	for _, s := range []string{
		"/exec/a/b/c", "/portForward/a/b/u", "/logs/../x", "/containerLogs/a/b/c", "/healthz/x",
		"/stats/summary", "/metrics/cadvisor", "/pods", "/runningpods/", "/configz", "/debug/pprof/profile",
		"/debug/flags/v", "/run/a/b/c", "/attach/a/b/u/c", "/stats/../exec/a/b/c", "//exec/a/b/c",
		"/metrics/../exec/a/b/c", "/stats%2F..%2Fexec/a/b/c", "/podsx", "/pods/../exec/a/b/c",
	} {
		f.Add("GET", s)
		f.Add("POST", s)
	}
	routes := sortRoutes([]Route{
		{Path: "/stats/", Subresource: "stats", Handler: http.NotFoundHandler()},
		{Path: "/metrics", Subresource: "metrics", Handler: http.NotFoundHandler()},
		{Path: "/metrics/cadvisor", Subresource: "metrics", Handler: http.NotFoundHandler()},
	})
	verbs := map[string]string{"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
	f.Fuzz(func(t *testing.T, method, p string) {
		target, err := parsePath(p, routes)
		if err != nil {
			return // 404: nothing is served
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Method = method
		r.URL.Path = p
		for _, fine := range []bool{true, false} {
			attrs := RequestAttributes("node-1", &user.DefaultInfo{Name: "u"}, r, routes, fine)
			if len(attrs) == 0 {
				t.Fatalf("%s %q: no attributes", method, p)
			}
			for _, a := range attrs {
				if a.GetResource() != "nodes" || a.GetName() != "node-1" || a.GetAPIGroup() != "" || !a.IsResourceRequest() {
					t.Fatalf("%s %q: attributes %+v are not the node's", method, p, a)
				}
				if a.GetVerb() != verbs[method] {
					t.Fatalf("%s %q: verb %q", method, p, a.GetVerb())
				}
				sub := a.GetSubresource()
				if target.ep == epRoute {
					if sub != target.route.Subresource && sub != "proxy" {
						t.Fatalf("%q served by route %s is authorized as nodes/%s", p, target.route.Path, sub)
					}
					continue
				}
				if !allowedSubresources[target.ep][sub] {
					t.Fatalf("%q served by %s is authorized as nodes/%s (fine-grained %v)", p, target.ep, sub, fine)
				}
			}
		}
	})
}
