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
	clk := clocktesting.NewFakeClock(t0)
	b := New(CrashLoop, clk)
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i, w := range want {
		failedAt := clk.Now()
		if in := b.IsInBackOffSince("c", failedAt); in != (i > 0) {
			t.Fatalf("retry %d: in back-off = %v right after the failure", i, in)
		}
		if i > 0 {
			// Just before the delay ends it still waits; at the delay it may go.
			prev := want[i-1] * time.Second
			clk.SetTime(failedAt.Add(prev - time.Millisecond))
			if in, d := b.IsInBackOffSince("c", failedAt), b.Get("c"); !in || d != prev {
				t.Fatalf("retry %d: want in back-off %v, got %v %v", i, prev, in, d)
			}
			clk.SetTime(failedAt.Add(prev))
			if b.IsInBackOffSince("c", failedAt) {
				t.Fatalf("retry %d: still in back-off after %v", i, prev)
			}
		}
		b.Next("c", failedAt)
		if got := b.Get("c"); got != w*time.Second {
			t.Fatalf("retry %d: delay after Next = %v, want %v", i, got, w*time.Second)
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
		name   string
		policy Policy
		steps  []step
	}{
		{"unknown key is never in back-off", CrashLoop, []step{{at: 0, failed: 0, wantIn: false, wantDelay: 0}}},
		{"first retry then within 10s", CrashLoop, []step{
			{at: 0, failed: 0, wantIn: false, next: true},
			{at: 15 * time.Second, failed: 12 * time.Second, wantIn: true, wantDelay: 10 * time.Second},
			{at: 22 * time.Second, failed: 12 * time.Second, wantIn: false, wantDelay: 10 * time.Second, next: true},
			{at: 25 * time.Second, failed: 23 * time.Second, wantIn: true, wantDelay: 20 * time.Second},
		}},
		{"ran ten minutes: history forgotten", CrashLoop, []step{
			{at: 0, failed: 0, next: true},
			{at: 21 * time.Second, failed: 10 * time.Second, next: true}, // delay now 20s
			// restarted at 21s, ran until 21s+10m+1s
			{at: 21*time.Second + 10*time.Minute + 2*time.Second, failed: 21*time.Second + 10*time.Minute + time.Second, wantIn: false, wantDelay: 20 * time.Second, next: true},
			{at: 21*time.Second + 10*time.Minute + 3*time.Second, failed: 21*time.Second + 10*time.Minute + 2*time.Second, wantIn: true, wantDelay: 10 * time.Second},
		}},
		{"ran just under ten minutes: history kept", CrashLoop, []step{
			{at: 0, failed: 0, next: true},
			{at: 21 * time.Second, failed: 10 * time.Second, next: true}, // delay now 20s, last update at 21s
			// failed 10m-1ms after the last retry: still the same crash loop
			{at: 41*time.Second + 10*time.Minute - time.Millisecond, failed: 21*time.Second + 10*time.Minute - time.Millisecond, wantIn: false, wantDelay: 20 * time.Second, next: true},
			{at: 42*time.Second + 10*time.Minute, failed: 41*time.Second + 10*time.Minute, wantIn: true, wantDelay: 40 * time.Second},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			b := New(tc.policy, clk)
			for i, s := range tc.steps {
				clk.SetTime(t0.Add(s.at))
				in, d := b.IsInBackOffSince("k", t0.Add(s.failed)), b.Get("k")
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

// Image pulls count the back-off from the failed pull itself.
func TestImagePullSinceUpdate(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := New(ImagePull, clk)
	b.Next("img", t0)
	clk.SetTime(t0.Add(9 * time.Second))
	if !b.IsInBackOffSinceUpdate("img", clk.Now()) {
		t.Fatal("9s after a failed pull: want back-off")
	}
	clk.SetTime(t0.Add(10 * time.Second))
	if b.IsInBackOffSinceUpdate("img", clk.Now()) {
		t.Fatal("10s after a failed pull: back-off must be over")
	}
}

func TestResetAndGC(t *testing.T) {
	for _, p := range []Policy{CrashLoop, ImagePull} {
		clk := clocktesting.NewFakeClock(t0)
		b := New(p, clk)
		b.Next("a", t0)
		b.Next("b", t0)
		b.Next("c", t0)
		b.Reset("a")
		if b.Get("a") != 0 || b.Get("b") != 10*time.Second {
			t.Fatalf("after reset: a=%v b=%v", b.Get("a"), b.Get("b"))
		}
		clk.SetTime(t0.Add(9 * time.Minute))
		b.Next("c", clk.Now()) // c retried recently: kept
		clk.SetTime(t0.Add(11 * time.Minute))
		b.GC()
		if b.Get("b") != 0 || b.Get("c") != 20*time.Second {
			t.Fatalf("after GC: b=%v (want forgotten) c=%v (want 20s)", b.Get("b"), b.Get("c"))
		}
	}
}
