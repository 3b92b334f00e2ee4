package prober

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func hostPort(t *testing.T, raw string) (string, int) {
	t.Helper()
	u, _ := url.Parse(raw)
	h, p, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(p)
	return h, n
}

func TestProbeHTTP(t *testing.T) {
	var seen http.Header
	var seenHost, seenURI string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		seen, seenHost, seenURI = r.Header.Clone(), r.Host, r.RequestURI
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/unready", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(418) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("b", 5*maxRespBody)) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	client := newHTTPClient(false)

	do := func(g *v1.HTTPGetAction, timeout time.Duration) httpOutcome {
		t.Helper()
		req, err := httpRequest(context.Background(), g, host, port, DefaultUserAgent)
		if err != nil {
			t.Fatal(err)
		}
		return probeHTTP(client, req, timeout)
	}

	o := do(&v1.HTTPGetAction{Path: "/ok?x=1", HTTPHeaders: []v1.HTTPHeader{{Name: "Host", Value: "app.example"}, {Name: "X-Custom", Value: "v"}}}, time.Second)
	if o.result != Success || o.output != "fine" || o.warning {
		t.Errorf("/ok: %+v", o)
	}
	if seenHost != "app.example" || seen.Get("X-Custom") != "v" || seen.Get("User-Agent") != DefaultUserAgent || seen.Get("Accept") != "*/*" || seenURI != "/ok?x=1" {
		t.Errorf("request: host %q uri %q headers %v", seenHost, seenURI, seen)
	}
	do(&v1.HTTPGetAction{Path: "/ok", HTTPHeaders: []v1.HTTPHeader{{Name: "User-Agent", Value: "mine"}, {Name: "Accept", Value: "text/plain"}}}, time.Second)
	if seen.Get("User-Agent") != "mine" || seen.Get("Accept") != "text/plain" {
		t.Errorf("own User-Agent/Accept not kept: %v", seen)
	}

	cases := []struct {
		path    string
		want    Result
		warning bool
		out     string
	}{
		{"/unready", Failure, false, "HTTP probe failed with statuscode: 503"},
		{"/teapot", Failure, false, "HTTP probe failed with statuscode: 418"},
		{"/moved", Success, false, "fine"},
		{"/away", Success, true, "Probe terminated redirects"},
		{"/loop", Failure, false, "stopped after 10 redirects"},
		{"/slow", Failure, false, "deadline exceeded"},
	}
	for _, tc := range cases {
		o := do(&v1.HTTPGetAction{Path: tc.path}, 300*time.Millisecond)
		if o.result != tc.want || o.warning != tc.warning || !strings.Contains(o.output, tc.out) {
			t.Errorf("%s: %+v, want %v warning=%v output containing %q", tc.path, o, tc.want, tc.warning, tc.out)
		}
	}
	if o := do(&v1.HTTPGetAction{Path: "/big"}, time.Second); len(o.output) != maxRespBody {
		t.Errorf("/big: %d bytes of body kept", len(o.output))
	}

	srv.Close()
	if o := do(&v1.HTTPGetAction{Path: "/ok"}, time.Second); o.result != Failure || !strings.Contains(o.output, "connection refused") {
		t.Errorf("closed server: %+v", o)
	}
}

func TestProbeHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secure") }))
	defer srv.Close()
	host, port := hostPort(t, srv.URL)
	req, err := httpRequest(context.Background(), &v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Path: "/"}, host, port, DefaultUserAgent)
	if err != nil {
		t.Fatal(err)
	}
	if o := probeHTTP(newHTTPClient(false), req, time.Second); o.result != Success || o.output != "secure" {
		t.Errorf("https with a self-signed certificate: %+v", o)
	}
}

func TestHTTPRequestHostAndPath(t *testing.T) {
	req, err := httpRequest(context.Background(), &v1.HTTPGetAction{Path: "healthz", Host: "10.1.2.3"}, "10.9.9.9", 8080, DefaultUserAgent)
	if err != nil || req.URL.String() != "http://10.1.2.3:8080/healthz" {
		t.Errorf("got %v %v", req.URL, err)
	}
	req, _ = httpRequest(context.Background(), &v1.HTTPGetAction{}, "fd00::1", 80, DefaultUserAgent)
	if req.URL.String() != "http://[fd00::1]:80" {
		t.Errorf("IPv6: %v", req.URL)
	}
	if _, err := httpRequest(context.Background(), &v1.HTTPGetAction{}, "", 80, DefaultUserAgent); err == nil {
		t.Errorf("no host: no error")
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	cases := []struct {
		port intstr.IntOrString
		want int
		err  bool
	}{
		{intstr.FromInt32(9090), 9090, false},
		{intstr.FromString("http"), 8080, false},
		{intstr.FromString("8081"), 8081, false},
		{intstr.FromString("grpc"), 0, true},
		{intstr.FromInt32(0), 0, true},
		{intstr.FromInt32(70000), 0, true},
	}
	for _, tc := range cases {
		got, err := resolvePort(tc.port, c)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%v: %d %v", tc.port.String(), got, err)
		}
	}
}
