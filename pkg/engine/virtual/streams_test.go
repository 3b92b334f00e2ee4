package virtual

import (
	"context"
	"fmt"
	"testing"

	streamingrc "k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// The streaming server's terminal sizes reach the provider in order, and
// the provider's channel closes when the server's does.
func TestResizesForwardsAndClosesWithInput(t *testing.T) {
	in := make(chan streamingrc.TerminalSize)
	out := resizes(context.Background(), in)
	go func() {
		in <- streamingrc.TerminalSize{Width: 80, Height: 24}
		in <- streamingrc.TerminalSize{Width: 120, Height: 40}
		close(in)
	}()
	var got []string
	for sz := range out {
		got = append(got, fmt.Sprintf("%dx%d", sz.Width, sz.Height))
	}
	if len(got) != 2 || got[0] != "80x24" || got[1] != "120x40" {
		t.Errorf("forwarded %v, want 80x24 then 120x40", got)
	}
}

// When the call returns (its context ends) while the server still holds
// its channel open, the copier ends and closes the provider's channel:
// no goroutine outlives an exec or attach.
func TestResizesEndsWithTheCall(t *testing.T) {
	in := make(chan streamingrc.TerminalSize)
	ctx, cancel := context.WithCancel(context.Background())
	out := resizes(ctx, in)
	cancel()
	if _, open := <-out; open {
		t.Error("a size arrived from a channel nothing was sent on")
	}
}

// No terminal: no channel.
func TestResizesNilIsNil(t *testing.T) {
	if resizes(context.Background(), nil) != nil {
		t.Error("a nil input gave a channel")
	}
}
