// Package errdefs is the kubelet's one error vocabulary: every error that
// crosses a package boundary can be classified as not found, invalid,
// retryable or terminal, whatever produced it (a CRI runtime over gRPC, the
// API server, a virtual node's provider).
//
// Errors are classified at the edges, where they come in (FromGRPC,
// FromAPI) or are made (NotFound, Invalid, ...), by wrapping: the cause
// stays reachable with errors.Is/As and in the message, so a check for the
// class never hides the original error, and a check for the original never
// misses because of the class (Virtual Kubelet lost NotFound checks to %w
// wrapping; here both work). Deciders (retry or give up, drop or keep)
// ask Is*; translation back to gRPC codes, HTTP statuses or API reasons
// happens only at the outgoing edges.
package errdefs

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The classes. Test with Is* (or errors.Is with these).
var (
	// ErrNotFound: the object does not exist (any more).
	ErrNotFound = errors.New("not found")
	// ErrInvalid: the request can never succeed as made (bad input).
	ErrInvalid = errors.New("invalid")
	// ErrRetryable: a transient failure; the same request may succeed later.
	ErrRetryable = errors.New("retryable")
	// ErrTerminal: a failure that retrying will not fix, though the input
	// was valid (refused, unsupported).
	ErrTerminal = errors.New("terminal")
)

// classified wraps an error with its class; both stay reachable.
type classified struct {
	class error
	cause error
}

func (c *classified) Error() string   { return c.cause.Error() }
func (c *classified) Unwrap() []error { return []error{c.cause, c.class} }

func wrap(class, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, class) {
		return err
	}
	return &classified{class: class, cause: err}
}

// NotFound classifies err as not found (nil stays nil).
func NotFound(err error) error { return wrap(ErrNotFound, err) }

// Invalid classifies err as invalid.
func Invalid(err error) error { return wrap(ErrInvalid, err) }

// Retryable classifies err as retryable.
func Retryable(err error) error { return wrap(ErrRetryable, err) }

// Terminal classifies err as terminal.
func Terminal(err error) error { return wrap(ErrTerminal, err) }

// IsNotFound reports whether err is classified not found.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsInvalid reports whether err is classified invalid.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

// IsRetryable reports whether err is worth retrying: classified retryable,
// or not classified at all (an unknown failure is retried with back-off,
// never dropped), or a deadline.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRetryable) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return !IsNotFound(err) && !IsInvalid(err) && !IsTerminal(err) && !errors.Is(err, context.Canceled)
}

// IsTerminal reports whether err is classified terminal.
func IsTerminal(err error) bool { return errors.Is(err, ErrTerminal) }

// IsConnectionClosed reports whether a request failed because its
// connection was closed under it ("use of closed network connection")
// while its context still runs. The kubelet does that itself: when it
// rotates its client certificate it closes its API connections so that
// new ones present the new certificate (pkg/node/certs), and a request in
// flight then fails. client-go retries such a GET, not a write. Asking
// once more, on a new connection, is safe for a read and for a write
// the API server guards (an update carrying its resourceVersion).
func IsConnectionClosed(ctx context.Context, err error) bool {
	return err != nil && errors.Is(err, net.ErrClosed) && ctx.Err() == nil
}

// FromGRPC classifies an error from a gRPC peer (a CRI runtime) by its
// status code; errors without a status pass through unclassified.
func FromGRPC(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.NotFound:
		return NotFound(err)
	case codes.InvalidArgument, codes.OutOfRange:
		return Invalid(err)
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return Retryable(err)
	case codes.Unimplemented, codes.PermissionDenied, codes.FailedPrecondition, codes.AlreadyExists:
		return Terminal(err)
	}
	return err
}

// FromAPI classifies an error from the API server by its reason.
func FromAPI(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsGone(err):
		return NotFound(err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return Invalid(err)
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
		return Retryable(err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsMethodNotSupported(err), apierrors.IsAlreadyExists(err):
		return Terminal(err)
	}
	return err
}
