package startgate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func key(sec int64, uid string) Key { return Key{Created: time.Unix(sec, 0), UID: types.UID(uid)} }

func TestKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		a, b Key
		want bool
	}{
		{key(1, "z"), key(2, "a"), true},
		{key(2, "a"), key(1, "z"), false},
		{key(1, "a"), key(1, "b"), true},
		{key(1, "b"), key(1, "a"), false},
		{key(1, "a"), key(1, "a"), false},
		{Key{UID: "s"}, key(1, "a"), true}, // a static pod without a creation time
	} {
		if got := tc.a.before(tc.b); got != tc.want {
			t.Errorf("%v before %v = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// With the slots taken, waiters are let in oldest pod first, whatever the
// order they asked in; a pod's second call goes ahead of younger pods.
func TestGrantsOldestPodFirst(t *testing.T) {
	g := New(1, 0)
	ctx := context.Background()
	hold, err := g.Acquire(ctx, key(5, "first"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	ask := func(k Key, name string) {
		defer wg.Done()
		release, err := g.Acquire(ctx, k)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		release()
	}
	for i, k := range []Key{key(9, "c"), key(3, "old"), key(7, "b"), key(7, "a")} {
		wg.Add(1)
		go ask(k, fmt.Sprint(k.Created.Unix(), k.UID))
		waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.waiting.Len() == i+1 })
	}
	hold()
	wg.Wait()
	want := []string{"3old", "7a", "7b", "9c"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if g.InUse() != 0 {
		t.Errorf("in use %d after all released", g.InUse())
	}
}

// Never more calls at once than slots, and every call gets through.
func TestNeverMoreThanSlots(t *testing.T) {
	g := New(3, 0)
	var now, peak, done atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			release, err := g.Acquire(context.Background(), key(int64(i%7), fmt.Sprint(i)))
			if err != nil {
				t.Error(err)
				return
			}
			n := now.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			now.Add(-1)
			done.Add(1)
			release()
			release() // a second release does nothing
		}(i)
	}
	wg.Wait()
	if peak.Load() > 3 || peak.Load() == 0 || done.Load() != 50 {
		t.Errorf("peak %d, done %d", peak.Load(), done.Load())
	}
	if g.InUse() != 0 {
		t.Errorf("in use %d", g.InUse())
	}
}

// A call that holds its slot past slowAfter stops counting: the next one
// is let in without waiting for it, and its late release frees nothing
// twice.
func TestSlowCallGivesUpItsSlot(t *testing.T) {
	g := New(1, 50*time.Millisecond)
	ctx := context.Background()
	hung, err := g.Acquire(ctx, key(1, "hung"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	next, err := g.Acquire(ctx, key(2, "next"))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		t.Errorf("let in after %v, want about 50ms", d)
	}
	hung()
	if g.InUse() != 1 {
		t.Errorf("in use %d after the slow call's release, want 1 (next's)", g.InUse())
	}
	next()
	if g.InUse() != 0 {
		t.Errorf("in use %d", g.InUse())
	}
}

// A waiter whose context ends leaves the queue and takes no slot.
func TestCancelledWaiterLeaves(t *testing.T) {
	g := New(1, 0)
	hold, _ := g.Acquire(context.Background(), key(1, "a"))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Acquire(ctx, key(2, "b"))
		errc <- err
	}()
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.waiting.Len() == 1 })
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
	hold()
	if g.InUse() != 0 || g.waiting.Len() != 0 {
		t.Errorf("in use %d, waiting %d", g.InUse(), g.waiting.Len())
	}
}

func TestNilAndZeroGatesAdmitAll(t *testing.T) {
	for _, g := range []*Gate{nil, New(0, 0)} {
		for i := 0; i < 5; i++ {
			if _, err := g.Acquire(context.Background(), key(1, "a")); err != nil {
				t.Fatal(err)
			}
		}
		if g.InUse() != 0 {
			t.Errorf("in use %d", g.InUse())
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
