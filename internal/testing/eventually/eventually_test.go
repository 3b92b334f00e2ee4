package eventually

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records what the helper reports instead of
// ending the test that runs it.
type recorder struct {
	testing.TB
	helpers int
	fatals  []string
}

func (r *recorder) Helper() { r.helpers++ }

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}

func TestWithin(t *testing.T) {
	const limit = 50 * time.Millisecond
	tests := []struct {
		name      string
		holdsFrom int // the call from which cond holds; 0: never
		seen      bool
		wantFatal string // "" for none
	}{
		{name: "holds at once", holdsFrom: 1},
		{name: "holds after a few polls", holdsFrom: 5},
		{name: "never holds", wantFatal: "timed out after 50ms waiting for the thing"},
		{name: "never holds, with what it saw", seen: true, wantFatal: "timed out after 50ms waiting for the thing; last seen: state "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			calls := 0
			start := time.Now()
			within(r, limit, "the thing", func() (bool, string) {
				calls++
				seen := ""
				if tt.seen {
					seen = fmt.Sprintf("state %d", calls)
				}
				return tt.holdsFrom > 0 && calls >= tt.holdsFrom, seen
			})
			elapsed := time.Since(start)
			if r.helpers == 0 {
				t.Error("the helper did not call t.Helper")
			}
			if tt.wantFatal == "" {
				if len(r.fatals) != 0 {
					t.Fatalf("failed a condition that held: %q", r.fatals)
				}
				if calls != tt.holdsFrom {
					t.Errorf("polled %d times, want %d (stop as soon as it holds)", calls, tt.holdsFrom)
				}
				return
			}
			if len(r.fatals) != 1 || !strings.HasPrefix(r.fatals[0], tt.wantFatal) {
				t.Fatalf("failures %q, want one starting %q", r.fatals, tt.wantFatal)
			}
			if tt.seen && !strings.HasSuffix(r.fatals[0], fmt.Sprintf("state %d", calls)) {
				t.Errorf("failure %q does not report the last state, %d", r.fatals[0], calls)
			}
			if elapsed < limit {
				t.Errorf("gave up after %v, before the %v limit", elapsed, limit)
			}
		})
	}
}

// A condition that holds later than the first polls is seen to hold:
// the wait ends on the condition, not on a count of polls.
func TestTrueAndSeenWaitForAnotherGoroutine(t *testing.T) {
	done := make(chan struct{})
	go func() { time.Sleep(30 * time.Millisecond); close(done) }()
	closed := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	r := &recorder{}
	True(r, "the channel closed", closed)
	Seen(r, "the channel closed", func() (bool, string) { return closed(), "open" })
	if len(r.fatals) != 0 || !closed() {
		t.Fatalf("failures %q, closed %v", r.fatals, closed())
	}
}

// The package is for tests only: no package's own code imports it.
func TestImportedOnlyByTests(t *testing.T) {
	const self = "github.com/gokubelet/kubelet/internal/testing/eventually"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/gokubelet/kubelet/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if imp == self {
				t.Errorf("%s imports %s outside its tests", fields[0], self)
			}
		}
	}
}
