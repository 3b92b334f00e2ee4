package virtual

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/pkg/provider"
)

// statusProvider answers NodeStatus with err when set.
type statusProvider struct {
	provider.Provider
	err error
}

func (p *statusProvider) NodeStatus(context.Context) (provider.NodeStatus, error) {
	if p.err != nil {
		return provider.NodeStatus{}, p.err
	}
	return provider.NodeStatus{Capacity: v1.ResourceList{v1.ResourcePods: resource.MustParse("10")}}, nil
}

// A provider that cannot report its node status makes the node NotReady
// with the error (keeping the last capacity), not Ready on old facts; before
// any good answer there are no facts at all.
func TestNodeFactsOnProviderError(t *testing.T) {
	p := &statusProvider{err: errors.New("backend away")}
	f := &Facts{Provider: p, ProviderType: "mock", NodeName: "vn"}
	if _, err := f.NodeFacts(context.Background()); err == nil {
		t.Fatal("no facts yet and an error: want the error")
	}
	p.err = nil
	good, err := f.NodeFacts(context.Background())
	if err != nil || len(good.Readiness.Errors) != 0 {
		t.Fatalf("good facts: %+v %v", good.Readiness, err)
	}
	p.err = errors.New("backend away")
	bad, err := f.NodeFacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(bad.Readiness.Errors) != 1 || bad.Readiness.Errors[0] != "provider mock: node status: backend away" {
		t.Errorf("readiness after an error: %+v, want NotReady naming it", bad.Readiness)
	}
	if q := bad.Capacity[v1.ResourcePods]; q.Value() != 10 {
		t.Errorf("capacity after an error: %v, want the last", bad.Capacity)
	}
	p.err = nil
	if again, _ := f.NodeFacts(context.Background()); len(again.Readiness.Errors) != 0 {
		t.Errorf("after the provider answers again: %+v", again.Readiness)
	}
}
