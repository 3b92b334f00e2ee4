package prober

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func serveGRPC(t *testing.T, withHealth bool) (string, *health.Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	var hs *health.Server
	if withHealth {
		hs = health.NewServer()
		healthpb.RegisterHealthServer(s, hs)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String(), hs
}

func TestProbeGRPC(t *testing.T) {
	addr, hs := serveGRPC(t, true)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	bare, _ := serveGRPC(t, false)
	closed := func() string {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		a := l.Addr().String()
		l.Close()
		return a
	}()

	cases := []struct {
		name    string
		addr    string
		service string
		want    Result
		out     string
	}{
		{name: "server serving", addr: addr, want: Success},
		{name: "service not serving", addr: addr, service: "db", want: Failure, out: `service unhealthy (responded with "NOT_SERVING")`},
		{name: "unknown service", addr: addr, service: "nope", want: Failure, out: "health rpc probe failed"},
		{name: "no health service", addr: bare, want: Failure, out: "does not implement the grpc health protocol"},
		{name: "nothing listening", addr: closed, want: Failure, out: "health rpc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, out, err := probeGRPC(context.Background(), tc.addr, tc.service, false, 2*time.Second, DefaultUserAgent)
			if r != tc.want || err != nil || !strings.Contains(out, tc.out) {
				t.Errorf("got %v %q %v, want %v containing %q", r, out, err, tc.want, tc.out)
			}
		})
	}
}
