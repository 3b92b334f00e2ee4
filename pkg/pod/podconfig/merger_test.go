package podconfig

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func startMerger(t *testing.T) (*Merger, context.CancelFunc) {
	t.Helper()
	m := NewMerger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Start(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	return m, cancel
}

func send(t *testing.T, ch chan<- PodUpdate, u PodUpdate) {
	t.Helper()
	select {
	case ch <- u:
	case <-time.After(5 * time.Second):
		t.Fatalf("send of %s blocked", u.Op)
	}
}

func receive(t *testing.T, m *Merger) PodUpdate {
	t.Helper()
	select {
	case u := <-m.Updates():
		return u
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}
	return PodUpdate{}
}

func TestMergerSeenAllSources(t *testing.T) {
	m, _ := startMerger(t)
	file := m.Channel(podspec.SourceFile)
	api := m.Channel(podspec.SourceAPI)
	if m.Channel(podspec.SourceFile) != file {
		t.Fatal("Channel returned a new channel for the same source")
	}
	if m.SeenAllSources(podspec.SourceFile, podspec.SourceAPI) {
		t.Fatal("seen before any set")
	}

	send(t, file, PodUpdate{Op: SET, Source: podspec.SourceFile})
	u := receive(t, m)
	if u.Op != ADD || u.Source != podspec.SourceFile || len(u.Pods) != 0 {
		t.Fatalf("first empty set gave %s/%s with %d pods, want an empty ADD", u.Op, u.Source, len(u.Pods))
	}
	eventually.True(t, "file seen", func() bool { return m.SeenAllSources(podspec.SourceFile) })
	if m.SeenAllSources(podspec.SourceFile, podspec.SourceAPI) {
		t.Fatal("api seen before it sent")
	}

	send(t, api, PodUpdate{Op: SET, Source: podspec.SourceAPI, Pods: []*v1.Pod{pod("a", "a")}})
	// The source is not seen until its pods have been received, not even
	// once the merger has turned its set into the ADD it holds for us.
	eventually.True(t, "the api set diffed", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, pending := m.pending[podspec.SourceAPI]
		return !pending && len(m.known[podspec.SourceAPI]) == 1
	})
	if m.SeenAllSources(podspec.SourceAPI) {
		t.Fatal("api seen before its ADD was received")
	}
	u = receive(t, m)
	if summary([]PodUpdate{u}) != "ADD:a" || u.Source != podspec.SourceAPI {
		t.Fatalf("got %s from %s", summary([]PodUpdate{u}), u.Source)
	}
	eventually.True(t, "all seen", func() bool { return m.SeenAllSources(podspec.SourceFile, podspec.SourceAPI) })

	// An unchanged set produces nothing; a change produces its update.
	send(t, api, PodUpdate{Op: SET, Source: podspec.SourceAPI, Pods: []*v1.Pod{pod("a", "a")}})
	send(t, api, PodUpdate{Op: SET, Source: podspec.SourceAPI, Pods: []*v1.Pod{pod("a", "a", withPhase(v1.PodRunning))}})
	if got := summary([]PodUpdate{receive(t, m)}); got != "RECONCILE:a" {
		t.Fatalf("got %s, want RECONCILE:a", got)
	}
}

// A consumer that does not read must neither block the sources nor make
// the merger lose what changed while it was away.
func TestMergerSlowConsumerLosesNothing(t *testing.T) {
	m, _ := startMerger(t)
	file := m.Channel(podspec.SourceFile)
	api := m.Channel(podspec.SourceAPI)
	sets := [][]*v1.Pod{
		{pod("a", "a")},
		{pod("a", "a"), pod("b", "b")},
		{pod("b", "b", withImage("img:2"))},
		{pod("b", "b", withImage("img:2")), pod("c", "c")},
	}
	for i := 0; i < 50; i++ {
		for _, s := range sets {
			send(t, file, PodUpdate{Op: SET, Source: podspec.SourceFile, Pods: s})
		}
		send(t, api, PodUpdate{Op: SET, Source: podspec.SourceAPI, Pods: []*v1.Pod{pod("x", "x")}})
	}
	// Each source's last set holds a pod no earlier one has. A source's
	// sets are taken in order, so once the consumer knows that pod, every
	// earlier set of its source has been taken too: the final state below
	// cannot be met early, while the merger is still taking sets that
	// passed through it before (the last file set above is the final
	// file state of every round).
	send(t, file, PodUpdate{Op: SET, Source: podspec.SourceFile, Pods: []*v1.Pod{pod("b", "b", withImage("img:2")), pod("c", "c"), pod("f", "f")}})
	send(t, api, PodUpdate{Op: SET, Source: podspec.SourceAPI, Pods: []*v1.Pod{pod("x", "x"), pod("y", "y")}})

	// Now consume, applying each update to a model of what the kubelet knows.
	model := map[string]map[string]string{podspec.SourceFile: {}, podspec.SourceAPI: {}} // source -> uid -> image
	want := "api[x=img:1 y=img:1] file[b=img:2 c=img:1 f=img:1]"
	render := func() string {
		var parts []string
		for _, src := range []string{podspec.SourceAPI, podspec.SourceFile} {
			var pods []string
			for uid, img := range model[src] {
				pods = append(pods, uid+"="+img)
			}
			sort.Strings(pods)
			parts = append(parts, src+"["+strings.Join(pods, " ")+"]")
		}
		return strings.Join(parts, " ")
	}
	for render() != want {
		u := receive(t, m)
		for _, p := range u.Pods {
			switch u.Op {
			case ADD:
				if _, ok := model[u.Source][string(p.UID)]; ok {
					t.Fatalf("ADD of known pod %s", p.UID)
				}
				model[u.Source][string(p.UID)] = p.Spec.Containers[0].Image
			case UPDATE, RECONCILE, DELETE:
				if _, ok := model[u.Source][string(p.UID)]; !ok {
					t.Fatalf("%s of unknown pod %s", u.Op, p.UID)
				}
				model[u.Source][string(p.UID)] = p.Spec.Containers[0].Image
			case REMOVE:
				delete(model[u.Source], string(p.UID))
			}
		}
	}
	select {
	case u := <-m.Updates():
		t.Fatalf("extra update %s after reaching the final state", summary([]PodUpdate{u}))
	case <-time.After(20 * time.Millisecond):
	}
}

func TestMergerIncrementalOps(t *testing.T) {
	m, _ := startMerger(t)
	api := m.Channel(podspec.SourceAPI)
	send(t, api, PodUpdate{Op: SET, Pods: []*v1.Pod{pod("a", "a")}})
	if got := summary([]PodUpdate{receive(t, m)}); got != "ADD:a" {
		t.Fatalf("got %s", got)
	}
	send(t, api, PodUpdate{Op: ADD, Pods: []*v1.Pod{pod("b", "b")}})
	if got := summary([]PodUpdate{receive(t, m)}); got != "ADD:b" {
		t.Fatalf("got %s", got)
	}
	send(t, api, PodUpdate{Op: REMOVE, Pods: []*v1.Pod{pod("a", "a")}})
	if got := summary([]PodUpdate{receive(t, m)}); got != "REMOVE:a" {
		t.Fatalf("got %s", got)
	}
}

func TestMergerReceiverOwnsPods(t *testing.T) {
	m, _ := startMerger(t)
	file := m.Channel(podspec.SourceFile)
	send(t, file, PodUpdate{Op: SET, Pods: []*v1.Pod{pod("a", "a")}})
	u := receive(t, m)
	if u.Pods[0].Annotations[podspec.ConfigSourceAnnotation] != podspec.SourceFile || u.Pods[0].Annotations[podspec.ConfigSeenAnnotation] == "" {
		t.Fatalf("annotations %v: want config.source and config.seen", u.Pods[0].Annotations)
	}
	u.Pods[0].Spec.Containers[0].Image = "mutated"
	send(t, file, PodUpdate{Op: SET, Pods: []*v1.Pod{pod("a", "a")}})
	select {
	case u := <-m.Updates():
		t.Fatalf("receiver's edit leaked into the merger: %s", summary([]PodUpdate{u}))
	case <-time.After(20 * time.Millisecond):
	}
}

// Sets a source sends while the consumer has not yet taken the previous
// ones are coalesced, but a known pod left out of any of them is removed
// before it is added again: removing a static pod's manifest and writing
// it back restarts the pod even when both happen between two receives.
// The sequence is driven through record and diffPending directly, so the
// coalescing is certain rather than left to the scheduler.
func TestMergerCoalescedRemovalIsDelivered(t *testing.T) {
	a, b := pod("a", "a"), pod("b", "b")
	tests := []struct {
		name  string
		known []*v1.Pod
		sends []PodUpdate
		want  string
	}{
		{"removed and back", []*v1.Pod{a}, []PodUpdate{{Op: SET}, {Op: SET, Pods: []*v1.Pod{a}}}, "REMOVE:a ADD:a"},
		{"removed, back, removed", []*v1.Pod{a}, []PodUpdate{{Op: SET}, {Op: SET, Pods: []*v1.Pod{a}}, {Op: SET}}, "REMOVE:a"},
		{"incremental remove and add", []*v1.Pod{a, b}, []PodUpdate{{Op: REMOVE, Pods: []*v1.Pod{a}}, {Op: ADD, Pods: []*v1.Pod{a}}}, "REMOVE:a ADD:a"},
		{"only the pod left out is removed and added", []*v1.Pod{a, b}, []PodUpdate{{Op: SET, Pods: []*v1.Pod{a}}, {Op: SET, Pods: []*v1.Pod{a, b}}}, "REMOVE:b ADD:b"},
		{"never known: added once", nil, []PodUpdate{{Op: SET, Pods: []*v1.Pod{a}}, {Op: SET}, {Op: SET, Pods: []*v1.Pod{a}}}, "ADD:a"},
		{"one set is not coalesced", []*v1.Pod{a}, []PodUpdate{{Op: SET, Pods: []*v1.Pod{a}}}, ""},
	}
	logger := klog.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger()
			m.record(logger, podspec.SourceFile, PodUpdate{Op: SET, Pods: tt.known})
			m.diffPending(logger)
			for _, u := range tt.sends {
				m.record(logger, podspec.SourceFile, u)
			}
			var got []PodUpdate
			for _, q := range m.diffPending(logger) {
				got = append(got, q.update)
			}
			if s := summary(got); s != tt.want {
				t.Errorf("updates = %q, want %q", s, tt.want)
			}
			if len(m.dropped) != 0 {
				t.Errorf("dropped not cleared after the diff: %v", m.dropped)
			}
		})
	}
}
