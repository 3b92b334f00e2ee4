package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// selfSigned is a throwaway serving certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("pod", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGatedProbeFields runs real probes against a server that speaks only
// HTTP/2 cleartext and a gRPC server that speaks only TLS: each succeeds
// exactly when the probe asks for that protocol and its gate is on; with
// the gate off the field is ignored (the probe fails, as upstream's would)
// and a warning names it.
func TestGatedProbeFields(t *testing.T) {
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
	h2.Config.Protocols = new(http.Protocols)
	h2.Config.Protocols.SetUnencryptedHTTP2(true)
	h2.Start()
	defer h2.Close()
	h2Host, h2Port := hostPort(t, h2.URL)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	go gs.Serve(l)
	defer gs.Stop()
	gHost, gPort, _ := net.SplitHostPort(l.Addr().String())
	var gPortN int32
	fmt.Sscan(gPort, &gPortN)

	httpProbe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(h2Port), Protocol: ptr.To(v1.HTTPProtocolHTTP2)}}, TimeoutSeconds: 2}
	grpcProbe := &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: gPortN, Mode: ptr.To(v1.GRPCProbeModeTLS)}}, TimeoutSeconds: 2}
	for _, tc := range []struct {
		name      string
		opts      Options
		probe     *v1.Probe
		host      string
		want      Result
		out, warn string
	}{
		{name: "h2c, gate on", opts: Options{H2C: true}, probe: httpProbe, host: h2Host, want: Success, out: "HTTP/2.0"},
		{name: "h2c, gate off", probe: httpProbe, host: h2Host, want: Failure, warn: "Liveness probe of container c sets httpGet.protocol, which this node ignores: the H2CContainerProbe feature gate is off"},
		{name: "grpc TLS, gate on", opts: Options{GRPCTLS: true}, probe: grpcProbe, host: gHost, want: Success},
		{name: "grpc TLS, gate off", probe: grpcProbe, host: gHost, want: Failure, warn: "Liveness probe of container c sets grpc.mode, which this node ignores: the GRPCContainerProbeTLS feature gate is off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			tc.opts.Recorder = rec
			m := NewManager(tc.opts)
			c := &v1.Container{Name: "c", LivenessProbe: tc.probe}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
			m.warnIgnoredFields(pod, c, Liveness)
			o, err := m.runProbe(context.Background(), tc.probe, target{pod: pod, container: c, host: tc.host})
			if err != nil || o.result != tc.want || !strings.Contains(o.output, tc.out) {
				t.Errorf("probe: %v %q %v, want %v with %q", o.result, o.output, err, tc.want, tc.out)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if tc.warn == "" && len(events) != 0 || tc.warn != "" && (len(events) != 1 || !strings.Contains(events[0], EventFieldsIgnored) || !strings.Contains(events[0], tc.warn)) {
				t.Errorf("events %q, want a warning %q", events, tc.warn)
			}
		})
	}
}
