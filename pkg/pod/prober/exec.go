package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	remote "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

// ExecFunc runs cmd in a running container and waits at most timeout. A
// command that ran returns its exit code and a nil error; err is for a
// command that could not be run, and wraps ErrExecTimeout when the timeout
// passed.
type ExecFunc func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int, err error)

// ErrExecTimeout marks an exec that did not finish within its timeout.
var ErrExecTimeout = errors.New("exec timed out")

// ExecSyncer is the part of a CRI runtime client an exec probe needs
// (k8s.io/cri-api's RuntimeService has it).
type ExecSyncer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// CRIExec adapts a CRI runtime client to ExecFunc: a non-zero exit becomes
// an exit code, a deadline becomes ErrExecTimeout.
func CRIExec(rs ExecSyncer) ExecFunc {
	return func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
		stdout, stderr, err := rs.ExecSync(ctx, id, cmd, timeout)
		if err == nil {
			return stdout, stderr, 0, nil
		}
		var ce utilexec.CodeExitError
		if errors.As(err, &ce) {
			return stdout, stderr, ce.Code, nil
		}
		var cep *utilexec.CodeExitError
		if errors.As(err, &cep) {
			return stdout, stderr, cep.Code, nil
		}
		if errors.Is(err, remote.ErrCommandTimedOut) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
			return stdout, stderr, 0, fmt.Errorf("%w: %v", ErrExecTimeout, err)
		}
		return stdout, stderr, 0, err
	}
}

// maxExecOutput bounds the output kept for an event or log line.
const maxExecOutput = 10 << 10

// probeExec runs an exec probe: exit 0 is success, another exit code a
// failure with the command's output, a timeout a failure, anything else an
// error.
func probeExec(ctx context.Context, exec ExecFunc, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	if exec == nil {
		return Unknown, "", errors.New("exec probes are not supported by this kubelet")
	}
	if len(cmd) == 0 {
		return Unknown, "", errors.New("exec probe has no command")
	}
	stdout, stderr, code, err := exec(ctx, containerID, cmd, timeout)
	if err != nil {
		if errors.Is(err, ErrExecTimeout) {
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return Unknown, "", err
	}
	out := string(append(append([]byte{}, stdout...), stderr...))
	if len(out) > maxExecOutput {
		out = out[:maxExecOutput]
	}
	if code != 0 {
		if out == "" {
			out = fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), code)
		}
		return Failure, out, nil
	}
	return Success, out, nil
}
