package podconfig

import (
	"context"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// Merger merges the pod sets of all sources into one stream of changes.
// Create it with NewMerger, get one channel per source with Channel, start
// it with Run and read Updates.
type Merger struct {
	out chan PodUpdate
	now func() time.Time

	// wake (capacity 1) tells the loop that pending has something new.
	wake chan struct{}

	mu      sync.Mutex
	inputs  map[string]chan PodUpdate
	runCtx  context.Context // set while Run runs; forwarders stop with it
	pending map[string][]*v1.Pod
	known   map[string]podSet // what the consumer has been (or is being) told
	// dropped are known pods a coalesced (never diffed) pending set of
	// the source left out: the consumer must see them removed even if
	// the newest set has them again.
	dropped  map[string]map[types.UID]bool
	seen     sets.Set[string] // sources whose first set reached the consumer
	firstSet sets.Set[string] // sources whose first set has been diffed
}

// NewMerger returns a merger with no sources yet.
func NewMerger() *Merger {
	return &Merger{
		out:      make(chan PodUpdate),
		now:      time.Now,
		wake:     make(chan struct{}, 1),
		inputs:   map[string]chan PodUpdate{},
		pending:  map[string][]*v1.Pod{},
		known:    map[string]podSet{},
		dropped:  map[string]map[types.UID]bool{},
		seen:     sets.New[string](),
		firstSet: sets.New[string](),
	}
}

// Channel returns the channel the named source sends its updates on,
// creating it on first use (the same source always gets the same channel).
// A source sends PodUpdate{Op: SET} with its complete set of pods; other
// ops are applied to the source's latest set as incremental edits (ADD,
// UPDATE, DELETE and RECONCILE upsert by UID, REMOVE drops by UID). After
// sending, the source must not modify the pods it sent. A send blocks only
// until the merger has recorded the set, never on the consumer; before Run
// starts it blocks until Run starts. Channel may be called before or while
// Start runs.
func (m *Merger) Channel(source string) chan<- PodUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.inputs[source]; ok {
		return ch
	}
	ch := make(chan PodUpdate)
	m.inputs[source] = ch
	if m.runCtx != nil {
		go m.forward(m.runCtx, source, ch)
	}
	return ch
}

// Updates is the merged stream: ADD, UPDATE, DELETE, REMOVE and RECONCILE,
// each for one source and only the pods concerned. The pods are copies that
// belong to the receiver. The first set of every source produces at least
// one update (an empty ADD if it had no pods), so the receiver learns that
// the source has been seen.
func (m *Merger) Updates() <-chan PodUpdate {
	return m.out
}

// SeenAllSources reports whether every named source has sent at least one
// set and the updates for it have been received from Updates. It turns true
// just after the receive, never before, so a caller that has not yet
// received a source's pods can never be told the source was seen.
func (m *Merger) SeenAllSources(sources ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen.HasAll(sources...)
}

// queued is an update waiting for the consumer; markSeen names the source
// that counts as seen once this update has been received.
type queued struct {
	update   PodUpdate
	markSeen string
}

// Start merges until ctx ends, then returns nil. It must run exactly once.
func (m *Merger) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("podconfig")
	ctx = klog.NewContext(ctx, logger)
	m.mu.Lock()
	m.runCtx = ctx
	for source, ch := range m.inputs {
		go m.forward(ctx, source, ch)
	}
	m.mu.Unlock()

	var queue []queued
	var head queued
	var headCopy PodUpdate
	for {
		if len(queue) == 0 {
			queue = m.diffPending(logger)
			if len(queue) > 0 {
				head, headCopy = queue[0], copyUpdate(queue[0].update)
			} else {
				select {
				case <-m.wake:
				case <-ctx.Done():
					return nil
				}
			}
			continue
		}
		select {
		case m.out <- headCopy:
			queue = queue[1:]
			if len(queue) > 0 {
				head, headCopy = queue[0], copyUpdate(queue[0].update)
			}
			if head.markSeen != "" {
				m.mu.Lock()
				m.seen.Insert(head.markSeen)
				m.mu.Unlock()
				logger.V(2).Info("Source seen", "source", head.markSeen)
			}
		case <-m.wake:
			// A newer set is pending; it is diffed once the queue drains,
			// against what the queued updates will have told the consumer.
		case <-ctx.Done():
			return nil
		}
	}
}

// diffPending turns the newest pending set of every source into updates.
func (m *Merger) diffPending(logger klog.Logger) []queued {
	m.mu.Lock()
	defer m.mu.Unlock()
	sources := make([]string, 0, len(m.pending))
	for s := range m.pending {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var queue []queued
	for _, source := range sources {
		next, updates, rejected := diff(source, m.known[source], m.pending[source], m.dropped[source], m.now())
		delete(m.pending, source)
		delete(m.dropped, source)
		m.known[source] = next
		for _, r := range rejected {
			logger.Error(nil, "Dropping pod from source", "source", source,
				"pod", klog.KObj(r.Pod), "podUID", r.Pod.UID, "reason", r.Reason)
		}
		first := !m.firstSet.Has(source)
		m.firstSet.Insert(source)
		if first && len(updates) == 0 {
			updates = []PodUpdate{{Op: ADD, Source: source, Pods: []*v1.Pod{}}}
		}
		for i, u := range updates {
			q := queued{update: u}
			if first && i == len(updates)-1 {
				q.markSeen = source
			}
			queue = append(queue, q)
		}
	}
	return queue
}

// forward records what a source sends as its pending set.
func (m *Merger) forward(ctx context.Context, source string, ch <-chan PodUpdate) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-ch:
			if !ok {
				return
			}
			m.record(logger, source, u)
			select {
			case m.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (m *Merger) record(logger klog.Logger, source string, u PodUpdate) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.Source != "" && u.Source != source {
		logger.Error(nil, "Update names another source than its channel; using the channel's",
			"channel", source, "source", u.Source)
	}
	base, ok := m.pending[source]
	if ok {
		// base is coalesced away: what it left out stays removed.
		m.noteDropped(source, base)
	}
	if u.Op == SET {
		m.pending[source] = u.Pods
		return
	}
	// An incremental op edits the newest set of the source.
	if !ok {
		for _, p := range m.known[source] {
			base = append(base, p)
		}
		sort.Slice(base, func(i, j int) bool { return base[i].UID < base[j].UID })
	}
	byUID := map[string]int{}
	set := make([]*v1.Pod, 0, len(base)+len(u.Pods))
	for _, p := range base {
		if p == nil {
			// Removed by an earlier incremental op not yet diffed.
			continue
		}
		byUID[string(p.UID)] = len(set)
		set = append(set, p)
	}
	for _, p := range u.Pods {
		i, exists := byUID[string(p.UID)]
		switch {
		case u.Op == REMOVE && exists:
			set[i] = nil
		case u.Op == REMOVE:
		case exists:
			set[i] = p
		default:
			byUID[string(p.UID)] = len(set)
			set = append(set, p)
		}
	}
	m.pending[source] = set
}

// noteDropped records the known pods of source that set, a pending set
// about to be replaced before it was diffed, does not hold. Caller holds
// m.mu.
func (m *Merger) noteDropped(source string, set []*v1.Pod) {
	known := m.known[source]
	if len(known) == 0 {
		return
	}
	in := make(map[types.UID]bool, len(set))
	for _, p := range set {
		if p != nil {
			in[p.UID] = true
		}
	}
	for uid := range known {
		if in[uid] {
			continue
		}
		if m.dropped[source] == nil {
			m.dropped[source] = map[types.UID]bool{}
		}
		m.dropped[source][uid] = true
	}
}

func copyUpdate(u PodUpdate) PodUpdate {
	pods := make([]*v1.Pod, len(u.Pods))
	for i, p := range u.Pods {
		pods[i] = p.DeepCopy()
	}
	return PodUpdate{Op: u.Op, Source: u.Source, Pods: pods}
}
