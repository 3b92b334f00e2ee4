package kuberuntime

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/startgate"
)

// A pod's sandbox and container starts go through the start gate: with its
// only slot held by an older pod, SyncPod asks the runtime for nothing until
// the slot is released, then starts the pod.
func TestSyncPodWaitsForTheStartGate(t *testing.T) {
	e := newEnv(t)
	gate := startgate.New(1, 0)
	e.m.opts.StartGate = gate
	pod := testPod()
	pod.CreationTimestamp = metav1.NewTime(time.Unix(2000, 0))
	hold, err := gate.Acquire(context.Background(), startgate.Key{Created: time.Unix(1000, 0), UID: "older"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan container.SyncResult)
	go func() { done <- e.m.SyncPod(context.Background(), pod, st) }()
	deadline := time.Now().Add(10 * time.Second)
	for gate.Waiting() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("SyncPod never waited for the gate")
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range e.rs.GetCalls() {
		if c == "RunPodSandbox" || c == "CreateContainer" || c == "StartContainer" {
			t.Fatalf("%s called while the gate was held: %v", c, e.rs.GetCalls())
		}
	}
	hold()
	r := <-done
	if got := steps(r); got != "CreatePodSandbox StartContainer:app" {
		t.Fatalf("sync after the release: %s (%v)", got, r.Error())
	}
	if gate.InUse() != 0 || gate.Waiting() != 0 {
		t.Errorf("gate in use %d, waiting %d after the sync", gate.InUse(), gate.Waiting())
	}
}
