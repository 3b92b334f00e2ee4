package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// The helpers classify without hiding the cause, through further wraps.
func TestErrors(t *testing.T) {
	u := fmt.Errorf("exec in web: %w", Unsupported("batch", "exec"))
	if !errdefs.IsTerminal(u) || !errors.Is(u, ErrUnsupported) || errdefs.IsRetryable(u) {
		t.Errorf("unsupported: %v", u)
	}
	nf := fmt.Errorf("get: %w", NotFound("ns", "web"))
	if !errdefs.IsNotFound(nf) || errdefs.IsRetryable(nf) || nf.Error() != "get: pod ns/web not found in the provider" {
		t.Errorf("not found: %v", nf)
	}
}
