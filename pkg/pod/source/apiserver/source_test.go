package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/pod/podconfig"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

const node = "n1"

func pod(ns, name, nodeName string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: nodeName},
	}
}

// start runs a source over client and returns its update channel and a
// stop function that waits for Run to return.
func start(t *testing.T, client *fake.Clientset) (<-chan podconfig.PodUpdate, func()) {
	t.Helper()
	ch := make(chan podconfig.PodUpdate)
	src := New(client, node, ch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { stopAndWait(t, cancel, done) }) }
	t.Cleanup(stop)
	return ch, stop
}

func stopAndWait(t *testing.T, cancel func(), done <-chan error) {
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Run did not return after cancel")
	}
}

func recv(t *testing.T, ch <-chan podconfig.PodUpdate) podconfig.PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		if u.Op != podconfig.SET || u.Source != podspec.SourceAPI {
			t.Fatalf("got %v from %q, want SET from api", u.Op, u.Source)
		}
		return u
	case <-time.After(5 * time.Second):
		t.Fatalf("no update")
	}
	return podconfig.PodUpdate{}
}

func names(u podconfig.PodUpdate) string {
	var s []string
	for _, p := range u.Pods {
		s = append(s, p.Namespace+"/"+p.Name)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// recvUntil reads updates until one holds want (the source may send
// intermediate sets), failing after a timeout.
func recvUntil(t *testing.T, ch <-chan podconfig.PodUpdate, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	last := "<none>"
	for {
		select {
		case u := <-ch:
			if last = names(u); last == want {
				return
			}
		case <-deadline:
			t.Fatalf("never got %q; last set %q", want, last)
		}
	}
}

func TestFirstSetAfterSyncWithOnlyThisNodesPods(t *testing.T) {
	client := fake.NewClientset(pod("a", "p1", node), pod("b", "p2", node), pod("a", "other", "n2"))
	var mu sync.Mutex
	var selectors []string
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		selectors = append(selectors, a.(k8stesting.ListAction).GetListRestrictions().Fields.String())
		mu.Unlock()
		return false, nil, nil
	})
	client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		selectors = append(selectors, a.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String())
		mu.Unlock()
		return false, nil, nil
	})
	ch, _ := start(t, client)
	u := recv(t, ch)
	// The fake ignores field selectors; the source still drops other nodes' pods.
	if got := names(u); got != "a/p1,b/p2" {
		t.Errorf("first set = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(selectors) < 2 {
		t.Fatalf("expected a list and a watch, saw %v", selectors)
	}
	for _, s := range selectors {
		if s != "spec.nodeName="+node {
			t.Errorf("field selector %q, want spec.nodeName=%s", s, node)
		}
	}
}

func TestEmptyFirstSetIsSent(t *testing.T) {
	ch, _ := start(t, fake.NewClientset())
	if u := recv(t, ch); len(u.Pods) != 0 {
		t.Errorf("first set = %q, want empty", names(u))
	}
}

func TestChangesSendTheFullSet(t *testing.T) {
	client := fake.NewClientset(pod("a", "p1", node))
	ch, _ := start(t, client)
	recvUntil(t, ch, "a/p1")
	ctx := context.Background()

	if _, err := client.CoreV1().Pods("a").Create(ctx, pod("a", "p2", node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recvUntil(t, ch, "a/p1,a/p2")

	p := pod("a", "p1", node)
	p.Labels = map[string]string{"x": "y"}
	p.ResourceVersion = "changed"
	if _, err := client.CoreV1().Pods("a").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := recv(t, ch)
	for _, q := range u.Pods {
		if q.Name == "p1" && q.Labels["x"] != "y" {
			t.Errorf("update not in the set: %v", q.Labels)
		}
	}

	if err := client.CoreV1().Pods("a").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recvUntil(t, ch, "a/p2")
}

func TestBurstIsCoalescedAndHandlersNeverBlock(t *testing.T) {
	client := fake.NewClientset()
	ch, _ := start(t, client)
	recv(t, ch)
	ctx := context.Background()
	// Nobody reads while 50 pods arrive: the informer must keep going.
	for i := 0; i < 50; i++ {
		if _, err := client.CoreV1().Pods("a").Create(ctx, pod("a", fmt.Sprintf("p%02d", i), node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := 0; i < 50; i++ {
		want = append(want, fmt.Sprintf("a/p%02d", i))
	}
	sends := 0
	deadline := time.After(5 * time.Second)
	for {
		select {
		case u := <-ch:
			sends++
			if names(u) == strings.Join(want, ",") {
				if sends > 3 {
					t.Errorf("%d sends for one burst, want the bursts coalesced", sends)
				}
				return
			}
		case <-deadline:
			t.Fatalf("never got all 50 pods after %d sends", sends)
		}
	}
}

// TestWatchReestablishedAfterAPIServerRestart drops the watch (as an API
// server restart does) and then expires the resource version: the source
// must rewatch, relist, and keep sending without being restarted.
func TestWatchReestablishedAfterAPIServerRestart(t *testing.T) {
	client := fake.NewClientset(pod("a", "p1", node))
	watchers := make(chan *watch.FakeWatcher, 10)
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFakeWithChanSize(10, false)
		watchers <- w
		return true, w, nil
	})
	lists := 0
	var mu sync.Mutex
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		lists++
		mu.Unlock()
		return false, nil, nil
	})
	nextWatcher := func() *watch.FakeWatcher {
		select {
		case w := <-watchers:
			return w
		case <-time.After(5 * time.Second):
			t.Fatalf("no watch established")
		}
		return nil
	}
	ch, _ := start(t, client)
	w1 := nextWatcher()
	recvUntil(t, ch, "a/p1")

	p2 := pod("a", "p2", node)
	p2.ResourceVersion = "10"
	w1.Add(p2)
	recvUntil(t, ch, "a/p1,a/p2")

	// The connection drops: the reflector watches again from where it was.
	w1.Stop()
	w2 := nextWatcher()
	p3 := pod("b", "p3", node)
	p3.ResourceVersion = "11"
	w2.Add(p3)
	recvUntil(t, ch, "a/p1,a/p2,b/p3")

	// The restarted server no longer has that resource version: relist.
	// The tracker (the "server") holds p1 and p4 only now.
	if err := client.Tracker().Add(pod("c", "p4", node)); err != nil {
		t.Fatal(err)
	}
	w2.Error(&metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version"})
	recvUntil(t, ch, "a/p1,c/p4")
	nextWatcher()
	mu.Lock()
	defer mu.Unlock()
	if lists < 2 {
		t.Errorf("lists = %d, want a relist after the expired watch", lists)
	}
}

func TestRunStopsWhileBlockedOnSend(t *testing.T) {
	client := fake.NewClientset(pod("a", "p1", node))
	_, stop := start(t, client)
	eventually.True(t, "the source blocked sending its first set", func() bool {
		return eventually.BlockedIn("apiserver.(*Source).send")
	})
	stop() // must return although nobody reads
}

func TestRunRejectsEmptyNodeName(t *testing.T) {
	src := New(fake.NewClientset(), "", make(chan podconfig.PodUpdate))
	if err := src.Start(context.Background()); err == nil {
		t.Fatal("Run with no node name returned nil")
	}
}
