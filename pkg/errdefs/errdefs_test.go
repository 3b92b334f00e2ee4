package errdefs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClassesKeepTheirCause(t *testing.T) {
	cause := errors.New("container abc is gone")
	err := fmt.Errorf("stopping: %w", NotFound(cause))
	if !IsNotFound(err) || !errors.Is(err, cause) {
		t.Fatalf("class or cause lost: %v", err)
	}
	if err.Error() != "stopping: container abc is gone" {
		t.Errorf("message = %q, want the cause's words only", err.Error())
	}
	if IsRetryable(err) || IsInvalid(err) || IsTerminal(err) {
		t.Errorf("a not-found error has other classes too")
	}
	if NotFound(nil) != nil {
		t.Errorf("NotFound(nil) is not nil")
	}
	if again := NotFound(err); again != err {
		t.Errorf("classifying twice wrapped again")
	}
}

func TestRetryableByDefault(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("something odd"), true}, // unknown: retried, never dropped
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{Invalid(errors.New("bad")), false},
		{Terminal(errors.New("no")), false},
		{Retryable(errors.New("busy")), true},
	} {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestFromGRPCAndAPI(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tt := range []struct {
		name  string
		err   error
		class error
	}{
		{"grpc not found", FromGRPC(status.Error(codes.NotFound, "no such container")), ErrNotFound},
		{"grpc invalid", FromGRPC(status.Error(codes.InvalidArgument, "bad")), ErrInvalid},
		{"grpc unavailable", FromGRPC(status.Error(codes.Unavailable, "down")), ErrRetryable},
		{"grpc unimplemented", FromGRPC(status.Error(codes.Unimplemented, "no")), ErrTerminal},
		{"api not found", FromAPI(apierrors.NewNotFound(gr, "p")), ErrNotFound},
		{"api conflict", FromAPI(apierrors.NewConflict(gr, "p", errors.New("x"))), ErrRetryable},
		{"api invalid", FromAPI(apierrors.NewBadRequest("bad")), ErrInvalid},
		{"api forbidden", FromAPI(apierrors.NewForbidden(gr, "p", errors.New("x"))), ErrTerminal},
	} {
		if !errors.Is(tt.err, tt.class) {
			t.Errorf("%s: %v is not %v", tt.name, tt.err, tt.class)
		}
	}
	// The original stays testable with its own package.
	if !apierrors.IsNotFound(FromAPI(apierrors.NewNotFound(gr, "p"))) {
		t.Errorf("apierrors.IsNotFound lost through FromAPI")
	}
	if status.Code(FromGRPC(status.Error(codes.NotFound, "x"))) != codes.NotFound {
		t.Errorf("the gRPC code lost through FromGRPC")
	}
}

// What a write in flight returns when the kubelet closes its API
// connections for a new client certificate: url.Error around the read's
// net.OpError around net.ErrClosed.
func TestIsConnectionClosed(t *testing.T) {
	closed := &url.Error{Op: "Put", URL: "https://127.0.0.1:6443/apis/storage.k8s.io/v1/csinodes/vm",
		Err: &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}}
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"closed under the request", live, closed, true},
		{"wrapped again", live, fmt.Errorf("CSINode vm, driver d: %w", closed), true},
		{"the caller gave up", ended, closed, false},
		{"refused", live, &url.Error{Op: "Put", URL: "x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, false},
		{"an API error", live, apierrors.NewConflict(schema.GroupResource{Resource: "csinodes"}, "vm", errors.New("changed")), false},
		{"nil", live, nil, false},
	} {
		if got := IsConnectionClosed(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: IsConnectionClosed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
