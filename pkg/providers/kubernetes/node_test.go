package kubernetes

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The informers keep their last state when the target goes away, so the
// node's readiness asks the target's /readyz: NotReady with
// TargetUnreachable while it fails, back when it answers.
func TestNodeStatusFollowsTheTargetAPIServer(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && !down.Load() {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	target := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	p := NewForClients("vk", Config{}, target, nil, nil, nil)

	ready := func() *v1.NodeCondition {
		st, err := p.NodeStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == v1.NodeReady {
				return &st.Conditions[i]
			}
		}
		return nil
	}
	// Answering (its nodes not synced in this test: that reason).
	if c := ready(); c == nil || c.Reason != "TargetNotSynced" {
		t.Errorf("target answering: Ready condition %+v, want only the not-synced reason", c)
	}
	down.Store(true)
	if c := ready(); c == nil || c.Status != v1.ConditionFalse || c.Reason != "TargetUnreachable" {
		t.Errorf("target down: Ready condition %+v, want False TargetUnreachable", c)
	}
	down.Store(false)
	if c := ready(); c == nil || c.Reason == "TargetUnreachable" {
		t.Errorf("target back: Ready condition %+v", c)
	}
}
