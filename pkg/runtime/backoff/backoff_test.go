package backoff

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// A container that crashes immediately after every restart: the kubelet
// retries as soon as the back-off allows, and the delays double to the cap.
func TestCrashLoopDoublesToCap(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	b := New(CrashLoop, clk)
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		failedAt := clk.Now()
		if in, _ := b.InBackoffSince("c", failedAt); in != (i > 0) {
			t.Fatalf("retry %d: in back-off = %v right after the failure", i, in)
		}
		if i > 0 {
			// Just before the delay ends it still waits; at the delay it may go.
			prev := want[i-1] * time.Second
			clk.SetTime(failedAt.Add(prev - time.Millisecond))
			if in, d := b.InBackoffSince("c", failedAt); !in || d != prev {
				t.Fatalf("retry %d: want in back-off %v, got %v %v", i, prev, in, d)
			}
			clk.SetTime(failedAt.Add(prev))
			if in, _ := b.InBackoffSince("c", failedAt); in {
				t.Fatalf("retry %d: still in back-off after %v", i, prev)
			}
		}
		if got := b.Next("c", failedAt); got != w*time.Second {
			t.Fatalf("retry %d: Next = %v, want %v", i, got, w*time.Second)
		}
	}
}

func TestTable(t *testing.T) {
	type step struct {
		// at is the clock time (from t0); failed is the failure time passed
		// in; next says whether to call Next after checking.
		at, failed time.Duration
		wantIn     bool
		wantDelay  time.Duration
		next       bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"unknown key is never in back-off", []step{{at: 0, failed: 0, wantIn: false, wantDelay: 0}}},
		{"first retry then within 10s", []step{
			{at: 0, failed: 0, wantIn: false, next: true},
			{at: 15 * time.Second, failed: 12 * time.Second, wantIn: true, wantDelay: 10 * time.Second},
			{at: 22 * time.Second, failed: 12 * time.Second, wantIn: false, wantDelay: 10 * time.Second, next: true},
			{at: 25 * time.Second, failed: 23 * time.Second, wantIn: true, wantDelay: 20 * time.Second},
		}},
		{"ran ten minutes: history forgotten", []step{
			{at: 0, failed: 0, next: true},
			{at: 21 * time.Second, failed: 10 * time.Second, next: true}, // delay now 20s
			// restarted at 21s, ran until 21s+10m+1s
			{at: 21*time.Second + 10*time.Minute + 2*time.Second, failed: 21*time.Second + 10*time.Minute + time.Second, wantIn: false, wantDelay: 20 * time.Second, next: true},
			{at: 21*time.Second + 10*time.Minute + 3*time.Second, failed: 21*time.Second + 10*time.Minute + 2*time.Second, wantIn: true, wantDelay: 10 * time.Second},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			b := New(CrashLoop, clk)
			for i, s := range tc.steps {
				clk.SetTime(t0.Add(s.at))
				in, d := b.InBackoffSince("k", t0.Add(s.failed))
				if in != s.wantIn || (s.wantDelay != 0 && d != s.wantDelay) {
					t.Fatalf("step %d: got (%v, %v), want (%v, %v)", i, in, d, s.wantIn, s.wantDelay)
				}
				if s.next {
					b.Next("k", t0.Add(s.failed))
				}
			}
		})
	}
}

func TestResetAndGC(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	b := New(ImagePull, clk)
	b.Next("a", t0)
	b.Next("b", t0)
	b.Reset("a")
	if b.Get("a") != 0 || b.Get("b") != 10*time.Second {
		t.Fatalf("after reset: a=%v b=%v", b.Get("a"), b.Get("b"))
	}
	clk.SetTime(t0.Add(11 * time.Minute))
	b.GC()
	if b.Len() != 0 {
		t.Fatalf("GC kept %d keys", b.Len())
	}
}
