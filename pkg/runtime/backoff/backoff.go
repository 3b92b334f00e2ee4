// Package backoff keeps per-key exponential back-off state: the delay before
// a failed thing (a crashed container, an image pull) may be retried.
//
// It owns only the arithmetic and the per-key memory; it never sleeps and
// never schedules anything. Callers ask "is this key still backing off since
// the failure at time T?" and record a retry with Next. All times are passed
// in or read from an injectable clock, so the behaviour is table-testable.
//
// Semantics (the same as the upstream kubelet's, which users see in
// CrashLoopBackOff messages):
//   - the first retry waits Initial (10 s), each further retry doubles the
//     delay up to Max (300 s);
//   - a key whose last retry was more than ResetAfter (10 min) before the new
//     failure starts again from Initial: a container that ran ten minutes is
//     healthy enough to forget its history.
package backoff

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Policy is the shape of one back-off: first delay, cap, and the quiet
// period after which a key's history is forgotten.
type Policy struct {
	Initial    time.Duration
	Max        time.Duration
	ResetAfter time.Duration
}

// CrashLoop is the container restart back-off: 10 s doubling to 300 s, reset
// after 10 minutes without a restart.
var CrashLoop = Policy{Initial: 10 * time.Second, Max: 300 * time.Second, ResetAfter: 10 * time.Minute}

// ImagePull is the per-image pull back-off (same numbers as CrashLoop).
var ImagePull = CrashLoop

type entry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// Backoff is per-key back-off state. Safe for concurrent use.
type Backoff struct {
	policy Policy
	clock  clock.PassiveClock

	mu      sync.Mutex
	entries map[string]entry
}

// New returns an empty Backoff with the given policy. clk may be nil for the
// real clock.
func New(p Policy, clk clock.PassiveClock) *Backoff {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if p.ResetAfter == 0 {
		p.ResetAfter = 2 * p.Max
	}
	return &Backoff{policy: p, clock: clk, entries: map[string]entry{}}
}

// Policy returns the policy the Backoff was made with.
func (b *Backoff) Policy() Policy { return b.policy }

// Get returns the key's current delay, 0 when the key has none.
func (b *Backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries[key].delay
}

// InBackoffSince reports whether a retry of key must still wait, given that
// the failure happened at eventTime, and how long the current delay is.
// It does not change the state.
func (b *Backoff) InBackoffSince(key string, eventTime time.Time) (bool, time.Duration) {
	return b.InBackoffAt(key, eventTime, b.clock.Now())
}

// InBackoffSinceUpdate reports whether key is still backing off counted from
// its last Next call (for failures recorded at the time they happen, such as
// image pulls), and how long is left.
func (b *Backoff) InBackoffSinceUpdate(key string) (bool, time.Duration) {
	now := b.clock.Now()
	b.mu.Lock()
	e, ok := b.entries[key]
	b.mu.Unlock()
	if !ok {
		return false, 0
	}
	left := e.delay - now.Sub(e.lastUpdate)
	if left <= 0 {
		return false, 0
	}
	return true, left
}

// InBackoffAt is InBackoffSince with the current time given, for pure
// decision functions that take "now" as an input.
func (b *Backoff) InBackoffAt(key string, eventTime, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, 0
	}
	if b.expired(e, eventTime) {
		return false, e.delay
	}
	return now.Sub(eventTime) < e.delay, e.delay
}

// expired: the key's last retry was so long before eventTime that its
// history no longer counts.
func (b *Backoff) expired(e entry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > b.policy.ResetAfter
}

// Next records a retry of key after a failure at eventTime and returns the
// delay the following failure will have to wait: Initial for a new or
// expired key, else double the previous delay, capped at Max.
func (b *Backoff) Next(key string, eventTime time.Time) time.Duration {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || b.expired(e, eventTime) {
		e.delay = b.policy.Initial
	} else {
		e.delay *= 2
		if e.delay > b.policy.Max {
			e.delay = b.policy.Max
		}
	}
	e.lastUpdate = now
	b.entries[key] = e
	return e.delay
}

// Reset forgets key.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC forgets every key whose last retry is older than ResetAfter: such keys
// would start from Initial anyway.
func (b *Backoff) GC() {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.entries {
		if now.Sub(e.lastUpdate) > b.policy.ResetAfter {
			delete(b.entries, k)
		}
	}
}

// Len is the number of keys remembered.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}
