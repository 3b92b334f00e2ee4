package eventually

import (
	"sync/atomic"
	"testing"
)

// parkIn waits on release: a goroutine blocked inside a named function.
func parkIn(started chan<- struct{}, release <-chan struct{}) {
	close(started)
	<-release
}

// spinIn never parks until stop is set: a goroutine that is busy.
func spinIn(started chan<- struct{}, stop *atomic.Bool) {
	close(started)
	for !stop.Load() {
	}
}

func TestBlockedInAndSettled(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	go parkIn(started, release)
	<-started
	True(t, "parkIn blocked", func() bool { return BlockedIn("eventually.parkIn") })
	Seen(t, "parkIn settled", func() (bool, string) { return Settled("eventually.parkIn") })
	close(release)
	True(t, "parkIn gone", func() bool { return !BlockedIn("eventually.parkIn") })

	var stop atomic.Bool
	defer stop.Store(true)
	started = make(chan struct{})
	go spinIn(started, &stop)
	<-started
	if BlockedIn("eventually.spinIn") {
		t.Error("a spinning goroutine reported blocked")
	}
	if ok, seen := Settled("eventually.spinIn"); ok || seen == "" {
		t.Errorf("a spinning goroutine reported settled (states %q)", seen)
	}
}

func TestState(t *testing.T) {
	for head, want := range map[string]string{
		"goroutine 7 [select, 2 minutes]:\nmain.f()": "select",
		"goroutine 1 [chan receive]:\n":              "chan receive",
		"goroutine 9 [running]:":                     "running",
		"no header":                                  "",
	} {
		if got := state(head); got != want {
			t.Errorf("state(%q) = %q, want %q", head, got, want)
		}
	}
}
