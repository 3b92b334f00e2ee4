package shutdown

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
)

type fakeLogind struct {
	signals  chan bool
	mu       sync.Mutex
	held     int
	released int
}

func (f *fakeLogind) InhibitDelayMax() (time.Duration, error) { return 30 * time.Second, nil }
func (f *fakeLogind) Inhibit(string) (func(), error) {
	f.mu.Lock()
	f.held++
	f.mu.Unlock()
	return func() { f.mu.Lock(); f.released++; f.mu.Unlock() }, nil
}
func (f *fakeLogind) PrepareForShutdown() (<-chan bool, error) { return f.signals, nil }

type fakePods struct {
	mu    sync.Mutex
	pods  []*v1.Pod
	order []string
	grace map[string]int64
}

func (f *fakePods) ActivePods() []*v1.Pod { return f.pods }
func (f *fakePods) TerminatePod(p *v1.Pod, g int64, reason, msg string) <-chan struct{} {
	f.mu.Lock()
	f.order = append(f.order, p.Name)
	f.grace[p.Name] = g
	f.mu.Unlock()
	c := make(chan struct{})
	close(c)
	return c
}

func pod(name string, prio int32, grace int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: ptr.To(prio), TerminationGracePeriodSeconds: ptr.To(grace)}}
}

func TestShutdownStopsRegularThenCriticalPods(t *testing.T) {
	ld := &fakeLogind{signals: make(chan bool)}
	pods := &fakePods{pods: []*v1.Pod{pod("critical", 2000000000, 30), pod("b", 0, 5), pod("a", 0, 60)}, grace: map[string]int64{}}
	m := New(Options{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second,
		Connect: func() (Logind, error) { return ld, nil }, Pods: pods})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	if ok, _, _ := m.Admit(pod("x", 0, 1)); !ok {
		t.Fatal("refused before any shutdown")
	}
	ld.signals <- true
	eventually.True(t, "the inhibitor lock released after the pods stopped", func() bool {
		ld.mu.Lock()
		defer ld.mu.Unlock()
		return ld.released == 1
	})
	pods.mu.Lock()
	if got := strings.Join(pods.order, ","); got != "a,b,critical" {
		t.Errorf("stop order %s, want regular pods first", got)
	}
	if pods.grace["a"] != 20 || pods.grace["b"] != 5 || pods.grace["critical"] != 10 {
		t.Errorf("grace periods %v: want min(pod's, 30s-10s) for regular pods, min(pod's, 10s) for critical", pods.grace)
	}
	pods.mu.Unlock()
	if !m.ShuttingDown() {
		t.Error("not shutting down")
	}
	if ok, reason, msg := m.Admit(pod("x", 0, 1)); ok || reason != Reason || msg != AdmitMessage {
		t.Errorf("admitted during shutdown: %v %s %s", ok, reason, msg)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWithoutLogindSaysSo(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	m := New(Options{GracePeriod: 30 * time.Second, Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n"},
		Connect: func() (Logind, error) { return nil, errors.New("no system bus") }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventUnavailable) || !strings.Contains(e, "no system bus") {
			t.Errorf("event %q", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event says graceful shutdown is unavailable")
	}
	cancel()
	<-done
}
