// Package startgate bounds how many pod starts the kubelet asks of the
// container runtime at once, and in which order.
//
// A runtime starts containers at a rate its node's CPUs set (on containerd:
// the shim, runc, the CNI plugins, the metadata store). A kubelet that asks
// for every pod of a batch at once gets them all at about the same moment,
// at the end: each pod's calls share the CPUs with every other pod's, and
// the runtime's work in flight grows with the batch. Letting a few pods in
// at a time, oldest first, gets the same work done in the same time or
// less, but each pod is Running as soon as its own share is done: the
// batch's pods come up one after the other, and its median falls to about
// half of the whole batch's time.
//
// The order is the pod's, not the call's: a pod that has its sandbox goes
// ahead of the pods that have not begun, so that it is not queued behind
// them for its containers. A call that holds its slot longer than the
// gate's SlowAfter stops counting against the limit: it waits on something
// other than this node's CPUs (a CNI plugin's IPAM, a hung runtime), and
// must not hold up the pods behind it.
package startgate

import (
	"container/heap"
	"context"
	"runtime"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultSlowAfter is how long the kubelet's calls count against the
// limit: a sandbox or container start on a busy node takes a second or two.
const DefaultSlowAfter = 5 * time.Second

// DefaultSlots is the kubelet's limit: four starts per CPU of the node. A
// start spends much of its time off the CPU (the runtime's metadata writes,
// the shim's and runc's process starts), so fewer leave the CPUs idle. The
// floor of make bench straight through CRI on containerd 2.4 with 2 CPUs
// (one round each, 2026-11-30), p50 / whole batch in seconds:
//
//	slots   batch of 30   batch of 100   stream of 60 (1/200ms)
//	4       11.2 / 20.2   32.0 / 72.8    13.6 / 38.7
//	8        8.8 / 14.4   31.8 / 61.1    11.6 / 32.6
//	16      15.2 / 16.7   35.7 / 57.3    17.1 / 34.2
//	none    (a RunPodSandbox of the batch of 100 hit its 60 s deadline)
//
// With 16 a sandbox took 8 s, past DefaultSlowAfter: the gate no longer
// held anything back.
func DefaultSlots() int { return 4 * runtime.NumCPU() }

// Key orders the callers: older pods first (Created, the API server's
// creation time of the pod; a static pod's may be zero and goes first), then
// by UID, so that pods created in the same second keep one order across all
// of their calls.
type Key struct {
	Created time.Time
	UID     types.UID
}

func (k Key) before(o Key) bool {
	if !k.Created.Equal(o.Created) {
		return k.Created.Before(o.Created)
	}
	return k.UID < o.UID
}

// Gate admits at most its number of slots of calls at once. A nil Gate, or
// one of no slots, admits every call at once.
type Gate struct {
	slots     int
	slowAfter time.Duration

	mu      sync.Mutex
	inUse   int
	seq     uint64
	waiting waiters
}

// New returns a gate of slots slots whose calls stop counting after
// slowAfter (0: never).
func New(slots int, slowAfter time.Duration) *Gate {
	return &Gate{slots: slots, slowAfter: slowAfter}
}

type waiter struct {
	key   Key
	seq   uint64
	index int
	ready chan struct{}
	// Set under the gate's lock: granted when let in, done when released,
	// slow when its slot was given up for taking too long.
	granted, done, slow bool
	timer               *time.Timer
}

// Acquire waits for a slot for key's pod, or for ctx's end. On success the
// caller makes its call and then calls release (once; more calls do
// nothing).
func (g *Gate) Acquire(ctx context.Context, key Key) (release func(), err error) {
	if g == nil || g.slots <= 0 {
		return func() {}, nil
	}
	g.mu.Lock()
	g.seq++
	w := &waiter{key: key, seq: g.seq, ready: make(chan struct{})}
	heap.Push(&g.waiting, w)
	g.grantLocked()
	g.mu.Unlock()

	select {
	case <-w.ready:
	case <-ctx.Done():
		g.mu.Lock()
		if !w.granted {
			heap.Remove(&g.waiting, w.index)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		// Let in just as ctx ended: the slot is the caller's.
		g.mu.Unlock()
	}
	return func() { g.release(w) }, nil
}

// grantLocked lets waiters in, oldest key first, while slots are free.
func (g *Gate) grantLocked() {
	for g.inUse < g.slots && g.waiting.Len() > 0 {
		w := heap.Pop(&g.waiting).(*waiter)
		w.granted = true
		g.inUse++
		if g.slowAfter > 0 {
			w.timer = time.AfterFunc(g.slowAfter, func() { g.giveUp(w) })
		}
		close(w.ready)
	}
}

// giveUp frees the slot of a call that has held it for slowAfter.
func (g *Gate) giveUp(w *waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.done || w.slow {
		return
	}
	w.slow = true
	g.inUse--
	g.grantLocked()
}

func (g *Gate) release(w *waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if !w.slow {
		g.inUse--
	}
	g.grantLocked()
}

// InUse returns the slots taken now (for tests and logs).
func (g *Gate) InUse() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inUse
}

// Waiting returns the callers waiting for a slot now (for tests and logs).
func (g *Gate) Waiting() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting.Len()
}

// waiters is a heap of waiters, the oldest key (then the first to ask) on
// top.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	switch a, b := h[i].key, h[j].key; {
	case a.before(b):
		return true
	case b.before(a):
		return false
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}
