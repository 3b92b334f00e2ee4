package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// endpoint names one of the kubelet API's handlers.
type endpoint string

const (
	epHealthz       endpoint = "healthz"
	epPods          endpoint = "pods"
	epRunningPods   endpoint = "runningpods"
	epContainerLogs endpoint = "containerLogs"
	epExec          endpoint = "exec"
	epAttach        endpoint = "attach"
	epPortForward   endpoint = "portForward"
	epRun           endpoint = "run"
	epLogs          endpoint = "logs"
	epConfigz       endpoint = "configz"
	epPprof         endpoint = "pprof"
	epDebugFlags    endpoint = "debugFlags"
	epRoute         endpoint = "route"
)

// Paths of the kubelet API, as upstream serves them.
const (
	healthzPath     = "/healthz"
	podsPath        = "/pods"
	runningPodsPath = "/runningpods/"
	logsPath        = "/logs/"
	configzPath     = "/configz"
	pprofPath       = "/debug/pprof/"
	debugFlagsPath  = "/debug/flags/v"
	statsPath       = "/stats/"
	metricsPath     = "/metrics"
	checkpointPath  = "/checkpoint/"
	statuszPath     = "/statusz"
	flagzPath       = "/flagz"
)

// debugEndpoints are served only with enableDebuggingHandlers; otherwise
// they answer 405, as upstream.
var debugEndpoints = map[endpoint]bool{
	epRunningPods: true, epContainerLogs: true, epExec: true, epAttach: true,
	epPortForward: true, epRun: true, epLogs: true, epPprof: true,
	epConfigz: true, epDebugFlags: true,
}

// methods lists the HTTP methods each endpoint accepts.
var methods = map[endpoint][]string{
	epHealthz:       {http.MethodGet, http.MethodHead},
	epPods:          {http.MethodGet, http.MethodHead},
	epRunningPods:   {http.MethodGet, http.MethodHead},
	epContainerLogs: {http.MethodGet},
	epExec:          {http.MethodGet, http.MethodPost},
	epAttach:        {http.MethodGet, http.MethodPost},
	epPortForward:   {http.MethodGet, http.MethodPost},
	epRun:           {http.MethodPost},
	epLogs:          {http.MethodGet, http.MethodHead},
	epConfigz:       {http.MethodGet, http.MethodHead},
	epPprof:         {http.MethodGet, http.MethodPost},
	epDebugFlags:    {http.MethodPut},
}

// target is a parsed request path.
type target struct {
	ep endpoint
	// For pod endpoints.
	namespace, pod, uid, container string
	// rest is the part after the endpoint's prefix: the file under
	// /var/log for /logs/, the check for /healthz/<check>, the profile
	// for /debug/pprof/.
	rest string
	// route is the extra route for epRoute.
	route *Route
}

// errNotFound is a path no endpoint serves.
type errNotFound struct{ path string }

func (e errNotFound) Error() string { return fmt.Sprintf("no endpoint at %q", e.path) }

// isSubpath reports whether p is base or lies under it ("/stats" covers
// "/stats" and "/stats/summary", not "/statsx").
func isSubpath(p, base string) bool {
	base = strings.TrimSuffix(base, "/")
	return p == base || (strings.HasPrefix(p, base) && len(p) > len(base) && p[len(base)] == '/')
}

// podSegments splits the rest of a pod endpoint's path into n or m
// segments, each non-empty and neither "." nor "..".
func podSegments(rest string, counts ...int) ([]string, bool) {
	segs := strings.Split(rest, "/")
	ok := false
	for _, n := range counts {
		if len(segs) == n {
			ok = true
		}
	}
	if !ok {
		return nil, false
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
	}
	return segs, true
}

// parsePath maps a request path (decoded, as in url.URL.Path) to an
// endpoint and its parameters. routes are the extra routes, longest path
// first (see sortRoutes); they are tried before the built-in endpoints.
func parsePath(p string, routes []Route) (target, error) {
	for i := range routes {
		if isSubpath(p, routes[i].Path) {
			return target{ep: epRoute, route: &routes[i], rest: strings.TrimPrefix(strings.TrimPrefix(p, strings.TrimSuffix(routes[i].Path, "/")), "/")}, nil
		}
	}
	nf := errNotFound{p}
	head, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if !strings.HasPrefix(p, "/") {
		return target{}, nf
	}
	switch head {
	case "healthz":
		if rest == "" || !strings.Contains(rest, "/") {
			return target{ep: epHealthz, rest: rest}, nil
		}
	case "pods":
		if rest == "" {
			return target{ep: epPods}, nil
		}
	case "runningpods":
		if rest == "" {
			return target{ep: epRunningPods}, nil
		}
	case "containerLogs":
		if s, ok := podSegments(rest, 3); ok {
			return target{ep: epContainerLogs, namespace: s[0], pod: s[1], container: s[2]}, nil
		}
	case "exec", "attach", "run":
		if s, ok := podSegments(rest, 3, 4); ok {
			t := target{ep: endpoint(head), namespace: s[0], pod: s[1], container: s[len(s)-1]}
			if len(s) == 4 {
				t.uid = s[2]
			}
			return t, nil
		}
	case "portForward":
		if s, ok := podSegments(rest, 2, 3); ok {
			t := target{ep: epPortForward, namespace: s[0], pod: s[1]}
			if len(s) == 3 {
				t.uid = s[2]
			}
			return t, nil
		}
	case "logs":
		return target{ep: epLogs, rest: rest}, nil
	case "configz":
		if rest == "" {
			return target{ep: epConfigz}, nil
		}
	case "debug":
		if isSubpath(p, pprofPath) {
			return target{ep: epPprof, rest: strings.TrimPrefix(strings.TrimPrefix(p, "/debug/pprof"), "/")}, nil
		}
		if p == debugFlagsPath {
			return target{ep: epDebugFlags}, nil
		}
	}
	return target{}, nf
}

// sortRoutes orders routes longest path first, so the most specific one
// matches.
func sortRoutes(routes []Route) []Route {
	out := append([]Route(nil), routes...)
	sort.SliceStable(out, func(i, j int) bool {
		return len(strings.TrimSuffix(out[i].Path, "/")) > len(strings.TrimSuffix(out[j].Path, "/"))
	})
	return out
}

// builtinPrefixes are the first path segments the built-in endpoints own;
// an extra route may not take them over.
var builtinPrefixes = []string{"/healthz", "/pods", "/runningpods", "/containerLogs", "/exec", "/attach", "/portForward", "/run", "/logs", "/configz", "/debug"}

// validateRoutes checks extra routes: an absolute, clean path outside the
// built-in endpoints, a handler and a subresource, no duplicates.
func validateRoutes(routes []Route) error {
	seen := map[string]bool{}
	for _, r := range routes {
		p := strings.TrimSuffix(r.Path, "/")
		switch {
		case !strings.HasPrefix(r.Path, "/") || p == "":
			return fmt.Errorf("route %q: the path must be absolute and not the root", r.Path)
		case strings.Contains(r.Path, "//") || strings.Contains(r.Path+"/", "/../") || strings.Contains(r.Path+"/", "/./"):
			return fmt.Errorf("route %q: the path must be clean", r.Path)
		case r.Handler == nil:
			return fmt.Errorf("route %q: no handler", r.Path)
		case r.Subresource == "" || strings.ContainsAny(r.Subresource, "/ "):
			return fmt.Errorf("route %q: subresource %q must be one word (e.g. \"stats\", \"metrics\")", r.Path, r.Subresource)
		case seen[p]:
			return fmt.Errorf("route %q: registered twice", r.Path)
		}
		for _, b := range builtinPrefixes {
			if isSubpath(p, b) {
				return fmt.Errorf("route %q: %s belongs to a built-in endpoint", r.Path, b)
			}
		}
		seen[p] = true
	}
	return nil
}
