package eventually

import (
	"runtime"
	"strings"
)

// BlockedIn reports whether a goroutine of this process waits, on a
// channel, a select or a lock, inside the function whose traceback frames
// name it fn ("pkg.(*T).Method", without the module path's prefix needed).
// With True it waits for code to reach a point it cannot leave alone.
func BlockedIn(fn string) bool {
	for _, g := range goroutines() {
		if waiting(state(g)) && strings.Contains(g, fn+"(") {
			return true
		}
	}
	return false
}

// Settled reports whether every goroutine running fn, or started by it,
// waits on a channel, a select or a lock: until someone else acts, nothing
// they do can change. seen lists the states of the others. With Seen it
// replaces "sleep a while, then check nothing happened" by a wait for the
// moment from which nothing can happen. A goroutine waiting on a timer (a
// select with time.After) counts as settled: its wake-up is not waited for.
func Settled(fn string) (ok bool, seen string) {
	var busy []string
	for _, g := range goroutines() {
		if !strings.Contains(g, fn+"(") && !strings.Contains(g, fn+" in goroutine ") {
			continue
		}
		if s := state(g); !waiting(s) {
			busy = append(busy, s)
		}
	}
	return len(busy) == 0, strings.Join(busy, ", ")
}

// goroutines returns the tracebacks of this process's goroutines.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// state is a traceback's wait state: "select" for a traceback that starts
// "goroutine 7 [select, 2 minutes]:".
func state(traceback string) string {
	head, _, _ := strings.Cut(traceback, "\n")
	_, s, ok := strings.Cut(head, "[")
	if !ok {
		return ""
	}
	s, _, _ = strings.Cut(s, "]")
	s, _, _ = strings.Cut(s, ",")
	return s
}

// waiting reports whether a goroutine in this state is parked until
// another goroutine acts.
func waiting(state string) bool {
	return strings.HasPrefix(state, "select") || strings.HasPrefix(state, "chan ") ||
		strings.HasPrefix(state, "sync.") || state == "semacquire"
}
