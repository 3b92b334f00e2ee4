package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	remote "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

func TestProbeExec(t *testing.T) {
	cases := []struct {
		name     string
		stdout   string
		stderr   string
		code     int
		err      error
		want     Result
		wantOut  string
		wantErr  bool
		wantArgs string
	}{
		{name: "exit 0 succeeds", stdout: "fine\n", want: Success, wantOut: "fine\n"},
		{name: "exit 1 fails with its output", stdout: "out ", stderr: "cat: /tmp/x: No such file", code: 1, want: Failure, wantOut: "out cat: /tmp/x: No such file"},
		{name: "silent failure names the command", code: 2, want: Failure, wantOut: `command "cat /tmp/x" exited with 2`},
		{name: "timeout fails", err: fmt.Errorf("%w: slow", ErrExecTimeout), want: Failure, wantOut: `command "cat /tmp/x" timed out`},
		{name: "other error is no result", err: errors.New("container not running"), want: Unknown, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gotID string
			var gotTimeout time.Duration
			exec := func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
				gotID, gotTimeout = id, timeout
				return []byte(tc.stdout), []byte(tc.stderr), tc.code, tc.err
			}
			r, out, err := probeExec(context.Background(), exec, "c1", []string{"cat", "/tmp/x"}, 3*time.Second)
			if r != tc.want || out != tc.wantOut || (err != nil) != tc.wantErr {
				t.Errorf("got %v %q %v, want %v %q err=%v", r, out, err, tc.want, tc.wantOut, tc.wantErr)
			}
			if gotID != "c1" || gotTimeout != 3*time.Second {
				t.Errorf("exec called with %q %v", gotID, gotTimeout)
			}
		})
	}
}

func TestProbeExecCutsOutput(t *testing.T) {
	exec := func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
		return []byte(strings.Repeat("x", 3*maxExecOutput)), nil, 1, nil
	}
	_, out, _ := probeExec(context.Background(), exec, "c1", []string{"x"}, time.Second)
	if len(out) != maxExecOutput {
		t.Errorf("output of %d bytes kept", len(out))
	}
}

type fakeExecSyncer struct {
	stdout, stderr []byte
	err            error
}

func (f fakeExecSyncer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	return f.stdout, f.stderr, f.err
}

func TestCRIExec(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		wantCode int
		timeout  bool
		other    bool
	}{
		{name: "success"},
		{name: "exit code from the CRI client", err: utilexec.CodeExitError{Err: errors.New("exited with 3"), Code: 3}, wantCode: 3},
		{name: "client timeout", err: fmt.Errorf("%w: %q timed out after 1s", remote.ErrCommandTimedOut, "sleep 10"), timeout: true},
		{name: "grpc deadline", err: status.Error(codes.DeadlineExceeded, "deadline"), timeout: true},
		{name: "runtime error", err: status.Error(codes.NotFound, "no such container"), other: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := CRIExec(fakeExecSyncer{stdout: []byte("o"), err: tc.err})
			out, _, code, err := f(context.Background(), "c1", []string{"x"}, time.Second)
			if string(out) != "o" || code != tc.wantCode {
				t.Errorf("out %q code %d", out, code)
			}
			if got := errors.Is(err, ErrExecTimeout); got != tc.timeout {
				t.Errorf("timeout %v, want %v (%v)", got, tc.timeout, err)
			}
			if tc.other != (err != nil && !tc.timeout) {
				t.Errorf("err %v", err)
			}
		})
	}
}
