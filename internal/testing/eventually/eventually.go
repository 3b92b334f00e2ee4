// Package eventually is the unit tests' bounded wait: it polls a condition
// until it holds and fails the test, naming what it waited for and the last
// state it saw, when the condition does not hold within Limit. BlockedIn and
// Settled are conditions on this process's goroutines, for tests that check
// nothing more happened: they wait for the moment from which nothing can,
// rather than sleeping.
//
// Only _test.go files import it (its own test checks that no package's code
// does). A wait is a failure bound, never a performance goal: tests that
// need something to happen within a time say so with a clock, not here. The
// integration and end-to-end tiers have test/framework's Eventually, bounded
// for a real runtime and cluster.
package eventually

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Limit is how long a condition may take to hold before the test fails: the
// longest any unit test waited before this package existed, so that a slow
// shared machine fails no test that merely waits.
const Limit = 20 * time.Second

// backoff spaces the polls: the first comes after a millisecond, so a
// condition about to hold costs the test little, and the spacing doubles up
// to 10ms, so a long wait does not spin on a shared machine.
var backoff = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 8, Cap: 10 * time.Millisecond}

// True polls cond until it returns true and fails the test with
// t.Fatalf, naming what, if it has not within Limit.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	within(t, Limit, what, func() (bool, string) { return cond(), "" })
}

// Seen is True for a condition that also describes what it saw (ok is
// whether it holds): the failure then reports the last description, which
// says how far the awaited thing got.
func Seen(t testing.TB, what string, cond func() (ok bool, seen string)) {
	t.Helper()
	within(t, Limit, what, cond)
}

func within(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var last string
	err := backoff.DelayFunc().Until(ctx, true, true, func(context.Context) (bool, error) {
		ok, seen := cond()
		last = seen
		return ok, nil
	})
	if err == nil {
		return
	}
	if last == "" {
		t.Fatalf("timed out after %v waiting for %s", limit, what)
		return
	}
	t.Fatalf("timed out after %v waiting for %s; last seen: %s", limit, what, last)
}
