package container

import (
	"errors"

	"github.com/gokubelet/kubelet/pkg/errdefs"
)

// ErrContainerNotFound is returned when a pod has no instance of the named
// container (or no previous instance when one was asked for). It is
// classified not found (errdefs).
var ErrContainerNotFound = errdefs.NotFound(errors.New("container not found"))

// StreamOptions are the streams of an exec or attach session.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}
