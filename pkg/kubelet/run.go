package kubelet

import (
	"context"
	"fmt"

	"github.com/gokubelet/kubelet/pkg/kubeletconfig"
)

// Run starts the kubelet with the given settings and blocks until ctx ends
// or a fatal error occurs.
func Run(ctx context.Context, s *kubeletconfig.Settings) error {
	return fmt.Errorf("not implemented yet")
}
