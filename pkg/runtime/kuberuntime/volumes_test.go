package kuberuntime

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// The decision reaches the CRI: the flag is set on the right mount when
// the pod's handler reports support, IfPossible degrades when it does not,
// Enabled refuses the container with upstream's reason and an event, and
// the handler asked about is the pod's RuntimeClass handler.
func TestRecursiveReadOnlyReachesTheRuntime(t *testing.T) {
	rroPod := func(uid string, m v1.RecursiveReadOnlyMode) *v1.Pod {
		pod := basicPod(v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
			{Name: "plain", MountPath: "/plain", ReadOnly: true},
			{Name: "data", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &m},
		}})
		pod.UID = types.UID("uid-" + uid)
		return pod
	}
	newEnv := func(handlers ...*runtimeapi.RuntimeHandler) *psEnv {
		e := newPSEnv(t, func(o *Options) {
			o.PodSpec.RuntimeHandler = func(_ context.Context, name string) (string, error) {
				if name == "gvisor" {
					return "runsc", nil
				}
				return "", errors.New("no such class")
			}
		})
		e.rs.statusHandlers = handlers
		return e
	}
	rroFlags := func(cfg *runtimeapi.ContainerConfig) map[string]bool {
		out := map[string]bool{}
		for _, m := range cfg.GetMounts() {
			out[m.ContainerPath] = m.RecursiveReadOnly
		}
		return out
	}

	supporting := &runtimeapi.RuntimeHandler{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true}}
	e := newEnv(supporting, &runtimeapi.RuntimeHandler{Name: "runsc"})
	for _, m := range []v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible} {
		if r := e.sync(t, rroPod(string(m), m)); r.Error() != nil {
			t.Fatalf("%s on a supporting handler: %v", m, r.Error())
		}
		if got := rroFlags(e.rs.config("app")); !got["/data"] || got["/plain"] {
			t.Errorf("%s on a supporting handler: recursive flags %v", m, got)
		}
	}

	// The RuntimeClass's handler does not support it.
	ifp := rroPod("ifp-runsc", v1.RecursiveReadOnlyIfPossible)
	ifp.Spec.RuntimeClassName = ptr.To("gvisor")
	if r := e.sync(t, ifp); r.Error() != nil {
		t.Fatalf("IfPossible on runsc: %v", r.Error())
	}
	if got := rroFlags(e.rs.config("app")); got["/data"] || got["/plain"] {
		t.Errorf("IfPossible on a handler without support: recursive flags %v", got)
	}
	en := rroPod("en-runsc", v1.RecursiveReadOnlyEnabled)
	en.Spec.RuntimeClassName = ptr.To("gvisor")
	const want = `failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime`
	r := e.sync(t, en)
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreateContainerConfigError || w.Message != want {
		t.Errorf("Enabled on runsc: %+v (%s)", w, steps(r))
	}
	if ev := e.events(); !strings.Contains(ev, "Warning Failed Error: "+want) {
		t.Errorf("Enabled on runsc: no event naming it in %q", ev)
	}

	// containerd 1.6 reports no handlers at all.
	e = newEnv()
	r = e.sync(t, rroPod("en-old", v1.RecursiveReadOnlyEnabled))
	if w := r.WaitingReasons()["app"]; w.Reason != ReasonCreateContainerConfigError || w.Message != want {
		t.Errorf("Enabled without handlers: %+v (%s)", w, steps(r))
	}
	if r := e.sync(t, rroPod("ifp-old", v1.RecursiveReadOnlyIfPossible)); r.Error() != nil {
		t.Fatalf("IfPossible without handlers: %v", r.Error())
	}
	if got := rroFlags(e.rs.config("app")); got["/data"] {
		t.Errorf("IfPossible without handlers: recursive flags %v", got)
	}
}

// Pods that ask for nothing recursive never make the runtime answer a
// Status call on their start path.
func TestNoRecursiveReadOnlyNoStatusCall(t *testing.T) {
	e := newPSEnv(t, nil)
	pod := basicPod(v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "plain", MountPath: "/plain", ReadOnly: true}}})
	if r := e.sync(t, pod); r.Error() != nil {
		t.Fatal(r.Error())
	}
	for _, c := range e.rs.GetCalls() {
		if c == "Status" {
			t.Fatalf("a pod without recursiveReadOnly asked the runtime for its status: %v", e.rs.GetCalls())
		}
	}
}
