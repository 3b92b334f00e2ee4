package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// probeGRPC calls grpc.health.v1.Health/Check on addr (plaintext, or TLS
// without verifying the certificate) for service ("" is the server as a
// whole). SERVING succeeds; any other answer, an unimplemented health
// service, a timeout or a failed connection fails.
func probeGRPC(ctx context.Context, addr, service string, useTLS bool, timeout time.Duration, userAgent string) (Result, string, error) {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the pod's certificate is not the kubelet's to judge, as upstream
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent(userAgent))
	if err != nil {
		return Failure, fmt.Sprintf("failed to connect service %q: %v", addr, err), nil
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(false))
	if err != nil {
		switch st, _ := status.FromError(err); {
		case st.Code() == codes.Unimplemented:
			return Failure, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
		case st.Code() == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
			return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		default:
			return Failure, fmt.Sprintf("error: health rpc probe failed: %v", err), nil
		}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "", nil
}
