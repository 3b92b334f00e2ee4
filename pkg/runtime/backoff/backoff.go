// Package backoff holds the kubelet's back-off policies: the delay before
// a failed thing (a crashed container, an image pull) may be retried.
//
// The per-key state and the arithmetic are client-go's
// k8s.io/client-go/util/flowcontrol.Backoff, the one upstream's kubelet
// uses; this package only fixes the numbers and the clock. flowcontrol
// never sleeps and never schedules anything: callers ask "is this key still
// backing off since the failure at time T?" (IsInBackOffSince) and record
// a retry with Next. The clock is injectable, so the behaviour is
// table-testable.
//
// Semantics (the same as the upstream kubelet's, which users see in
// CrashLoopBackOff messages):
//   - the first retry waits Initial (10 s), each further retry doubles the
//     delay up to Max (300 s);
//   - a key whose last retry was more than ResetAfter (10 min) before the new
//     failure starts again from Initial: a container that ran ten minutes is
//     healthy enough to forget its history. GC drops such keys.
package backoff

import (
	"time"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Policy is the shape of one back-off: first delay, cap, and the quiet
// period after which a key's history is forgotten (flowcontrol's default,
// twice Max, when zero).
type Policy struct {
	Initial    time.Duration
	Max        time.Duration
	ResetAfter time.Duration
}

// CrashLoop is the container restart back-off: 10 s doubling to 300 s,
// reset after 10 minutes without a restart (upstream pins the reset at 600 s
// rather than deriving it from the cap).
var CrashLoop = Policy{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 10 * time.Minute}

// ImagePull is the per-image pull back-off: 10 s doubling to 300 s, reset
// after twice the cap (upstream's image back-off, flowcontrol's default).
var ImagePull = Policy{Initial: 10 * time.Second, Max: 300 * time.Second}

// New returns an empty back-off with policy p reading clk (nil for the real
// clock).
func New(p Policy, clk clock.Clock) *flowcontrol.Backoff {
	b := flowcontrol.NewBackOff(p.Initial, p.Max)
	if clk != nil {
		b.Clock = clk
	}
	if reset := p.ResetAfter; reset > 0 {
		b.HasExpiredFunc = func(eventTime, lastUpdate time.Time, _ time.Duration) bool {
			return eventTime.Sub(lastUpdate) > reset
		}
	}
	return b
}
