// Package providertest is the conformance suite of pkg/provider: one set
// of tests that every provider passes, run against the mock provider in
// the unit tests and against the kubernetes provider on a real cluster.
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{New: func(t *testing.T, node string) provider.Provider { ... }})
//	}
//
// It checks the contract the engine relies on: identity and idempotent
// create, status reaching Running with a pod IP, metadata updates, delete
// ending in NotFound (and a last notification), error classes, that
// nothing passed in is mutated, that a provider lists only its own node's
// pods, and the optional streams (logs, exec, port-forward) when offered.
package providertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/provider"
)

// Harness adapts the suite to a provider.
type Harness struct {
	// New returns a provider for the named node, started and ready for
	// calls (register cleanups with t.Cleanup). Two calls with different
	// names give two nodes sharing one backend.
	New func(t *testing.T, nodeName string) provider.Provider
	// Namespace the test pods live in (default "default").
	Namespace string
	// Pod returns a pod spec whose container "main" runs until deleted
	// and echoes on TCP port EchoPort (default: the project's test image
	// running its TCP echo on 7000).
	Pod func() v1.PodSpec
	// EchoPort is the port the pod echoes on (default 7000).
	EchoPort int32
	// Timeout bounds each wait (default 90s).
	Timeout time.Duration
	// SkipStreams, when set, says why the provider's streams cannot work
	// in this environment; the streams test is then skipped (reported as
	// skipped, with the reason), not passed.
	SkipStreams string
}

// TestImage is the project's test image (images/testserver).
const TestImage = "gokubelet.local/testimage:1.0"

func (h *Harness) defaults() {
	if h.Namespace == "" {
		h.Namespace = "default"
	}
	if h.Pod == nil {
		h.Pod = func() v1.PodSpec {
			return v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: ptr(int64(1)),
				Containers: []v1.Container{{
					Name: "main", Image: TestImage, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"/testserver", "--tcp-port=7000", "--http-port=8080"},
				}},
			}
		}
	}
	if h.EchoPort == 0 {
		h.EchoPort = 7000
	}
	if h.Timeout == 0 {
		h.Timeout = 90 * time.Second
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	h.defaults()
	tests := []struct {
		name string
		f    func(*testing.T, *Harness)
	}{
		{"NodeStatus", testNodeStatus},
		{"NotFoundClasses", testNotFound},
		{"CreateRunsAndIsIdempotent", testCreate},
		{"UpdateMetadata", testUpdate},
		{"DeleteEndsInNotFound", testDelete},
		{"InputsNotMutated", testNoMutation},
		{"ListsOnlyOwnNode", testOwnNode},
		{"Streams", testStreams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, &h) })
	}
}

func ptr[T any](v T) *T { return &v }

// newPod makes a uniquely named pod bound to node.
func (h *Harness) newPod(node string) *v1.Pod {
	uid := uuid.NewUUID()
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "pt-" + string(uid)[:8], Namespace: h.Namespace, UID: uid,
			Labels: map[string]string{"suite": "providertest"}, CreationTimestamp: metav1.Now(),
		},
		Spec: func() v1.PodSpec { s := h.Pod(); s.NodeName = node; return s }(),
	}
}

// notifications records what a provider's notifier sends.
type notifications struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

func (n *notifications) add(p *v1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods = append(n.pods, p)
}

func (n *notifications) find(f func(*v1.Pod) bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pods {
		if f(p) {
			return true
		}
	}
	return false
}

// start builds a provider for node and registers a notifier when it has
// one.
func (h *Harness) start(t *testing.T, node string) (provider.Provider, *notifications) {
	p := h.New(t, node)
	var n *notifications
	if pn, ok := p.(provider.PodNotifier); ok {
		n = &notifications{}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		pn.NotifyPods(ctx, n.add)
	}
	return p, n
}

func (h *Harness) eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(h.Timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last seen: %s", h.Timeout, what, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createRunning creates pod and waits until the provider shows it Running
// with its main container running and a pod IP; the pod is deleted at the
// end of the test.
func (h *Harness) createRunning(t *testing.T, p provider.Provider, pod *v1.Pod) *v1.Pod {
	t.Helper()
	ctx := context.Background()
	if err := p.CreatePod(ctx, pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	t.Cleanup(func() {
		d := pod.DeepCopy()
		d.DeletionGracePeriodSeconds = ptr(int64(0))
		_ = p.DeletePod(context.Background(), d)
	})
	var got *v1.Pod
	h.eventually(t, "the pod Running with an IP", func() (bool, string) {
		st, err := p.GetPodStatus(ctx, pod.Namespace, pod.Name)
		if err != nil {
			return false, err.Error()
		}
		cs := findStatus(st.ContainerStatuses, "main")
		return st.Phase == v1.PodRunning && st.PodIP != "" && cs != nil && cs.State.Running != nil, fmt.Sprintf("%+v", st)
	})
	got, err := p.GetPod(ctx, pod.Namespace, pod.Name)
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	return got
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func testNodeStatus(t *testing.T, h *Harness) {
	p, _ := h.start(t, "pt-node-status")
	var st provider.NodeStatus
	h.eventually(t, "a node status with cpu, memory and pods capacity", func() (bool, string) {
		var err error
		st, err = p.NodeStatus(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
			q, ok := st.Capacity[r]
			if !ok || q.Sign() <= 0 {
				return false, fmt.Sprintf("capacity %v", st.Capacity)
			}
		}
		return true, ""
	})
	for _, c := range st.Conditions {
		if c.Type == v1.NodeReady && c.Status != v1.ConditionTrue {
			t.Errorf("node not Ready: %+v", c)
		}
	}
}

func testNotFound(t *testing.T, h *Harness) {
	p, _ := h.start(t, "pt-not-found")
	ctx := context.Background()
	if _, err := p.GetPod(ctx, h.Namespace, "pt-no-such-pod"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPod of an unknown pod: %v, want a NotFound error", err)
	}
	if _, err := p.GetPodStatus(ctx, h.Namespace, "pt-no-such-pod"); !errdefs.IsNotFound(err) {
		t.Errorf("GetPodStatus of an unknown pod: %v, want a NotFound error", err)
	}
	ghost := h.newPod("pt-not-found")
	ghost.DeletionGracePeriodSeconds = ptr(int64(0))
	if err := p.DeletePod(ctx, ghost); !errdefs.IsNotFound(err) {
		t.Errorf("DeletePod of an unknown pod: %v, want a NotFound error", err)
	}
}

func testCreate(t *testing.T, h *Harness) {
	const node = "pt-create"
	p, n := h.start(t, node)
	pod := h.newPod(node)
	got := h.createRunning(t, p, pod)
	if got.UID != pod.UID || got.Name != pod.Name || got.Namespace != pod.Namespace {
		t.Errorf("GetPod = %s/%s uid %s, want %s/%s uid %s", got.Namespace, got.Name, got.UID, pod.Namespace, pod.Name, pod.UID)
	}
	if err := p.CreatePod(context.Background(), pod); err != nil {
		t.Errorf("CreatePod of a pod that runs (same UID) must succeed: %v", err)
	}
	list, err := p.ListPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, l := range list {
		if l.Namespace == pod.Namespace && l.Name == pod.Name {
			count++
			if l.UID != pod.UID {
				t.Errorf("listed UID %s, want %s", l.UID, pod.UID)
			}
		}
	}
	if count != 1 {
		t.Errorf("ListPods shows the pod %d times, want once", count)
	}
	if n != nil {
		h.eventually(t, "a Running notification", func() (bool, string) {
			return n.find(func(p *v1.Pod) bool {
				return p.UID == pod.UID && p.Status.Phase == v1.PodRunning
			}), ""
		})
	}
}

func testUpdate(t *testing.T, h *Harness) {
	const node = "pt-update"
	p, _ := h.start(t, node)
	pod := h.newPod(node)
	h.createRunning(t, p, pod)
	upd := pod.DeepCopy()
	upd.Labels["providertest"] = "updated"
	if err := p.UpdatePod(context.Background(), upd); err != nil {
		t.Fatalf("UpdatePod with a new label: %v", err)
	}
	h.eventually(t, "the new label on the provider's pod", func() (bool, string) {
		got, err := p.GetPod(context.Background(), pod.Namespace, pod.Name)
		if err != nil {
			return false, err.Error()
		}
		return got.Labels["providertest"] == "updated", fmt.Sprint(got.Labels)
	})
}

func testDelete(t *testing.T, h *Harness) {
	const node = "pt-delete"
	p, n := h.start(t, node)
	pod := h.newPod(node)
	h.createRunning(t, p, pod)
	del := pod.DeepCopy()
	now := metav1.Now()
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, ptr(int64(1))
	if err := p.DeletePod(context.Background(), del); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.eventually(t, "the pod gone (GetPod NotFound, not listed)", func() (bool, string) {
		_, err := p.GetPod(context.Background(), pod.Namespace, pod.Name)
		if !errdefs.IsNotFound(err) {
			return false, fmt.Sprint("GetPod: ", err)
		}
		list, err := p.ListPods(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, l := range list {
			if l.UID == pod.UID {
				return false, "still listed"
			}
		}
		return true, ""
	})
	if err := p.DeletePod(context.Background(), del); !errdefs.IsNotFound(err) {
		t.Errorf("DeletePod of a deleted pod: %v, want a NotFound error", err)
	}
	if n != nil {
		h.eventually(t, "a notification with the deleted pod's last status", func() (bool, string) {
			return n.find(func(p *v1.Pod) bool {
				if p.UID != pod.UID {
					return false
				}
				cs := findStatus(p.Status.ContainerStatuses, "main")
				return cs != nil && cs.State.Running == nil
			}), ""
		})
	}
}

func testNoMutation(t *testing.T, h *Harness) {
	const node = "pt-mutation"
	p, _ := h.start(t, node)
	pod := h.newPod(node)
	keep := pod.DeepCopy()
	h.createRunning(t, p, pod)
	if !apiequality.Semantic.DeepEqual(pod, keep) {
		t.Errorf("CreatePod changed the pod it was given")
	}
	upd := pod.DeepCopy()
	upd.Annotations = map[string]string{"providertest": "x"}
	keepUpd := upd.DeepCopy()
	if err := p.UpdatePod(context.Background(), upd); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(upd, keepUpd) {
		t.Errorf("UpdatePod changed the pod it was given")
	}
	// What the provider returned is the caller's: changing it must not
	// change the provider's pod.
	got, err := p.GetPod(context.Background(), pod.Namespace, pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = "Scribbled"
	got.Labels["scribbled"] = "yes"
	again, err := p.GetPod(context.Background(), pod.Namespace, pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.Phase == "Scribbled" || again.Labels["scribbled"] == "yes" {
		t.Errorf("the provider shares the pods it returns with the caller")
	}
	del := upd.DeepCopy()
	del.DeletionGracePeriodSeconds = ptr(int64(0))
	keepDel := del.DeepCopy()
	if err := p.DeletePod(context.Background(), del); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(del, keepDel) {
		t.Errorf("DeletePod changed the pod it was given")
	}
}

func testOwnNode(t *testing.T, h *Harness) {
	a, _ := h.start(t, "pt-own-a")
	b, _ := h.start(t, "pt-own-b")
	pod := h.newPod("pt-own-a")
	h.createRunning(t, a, pod)
	list, err := b.ListPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.UID == pod.UID {
			t.Fatalf("node b lists node a's pod %s/%s", l.Namespace, l.Name)
		}
	}
	if _, err := b.GetPod(context.Background(), pod.Namespace, pod.Name); !errdefs.IsNotFound(err) {
		t.Errorf("node b's GetPod of node a's pod: %v, want NotFound", err)
	}
}

type closeBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *closeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *closeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

func (b *closeBuffer) Close() error { return nil }

func testStreams(t *testing.T, h *Harness) {
	if h.SkipStreams != "" {
		t.Skip(h.SkipStreams)
	}
	const node = "pt-streams"
	p, _ := h.start(t, node)
	_, logs := p.(provider.LogsProvider)
	_, exec := p.(provider.ExecProvider)
	_, pf := p.(provider.PortForwardProvider)
	if !logs && !exec && !pf {
		t.Log("the provider offers no streams")
		return
	}
	pod := h.newPod(node)
	h.createRunning(t, p, pod)
	ctx, cancel := context.WithTimeout(context.Background(), h.Timeout)
	defer cancel()
	if lp, ok := p.(provider.LogsProvider); ok {
		t.Run("Logs", func(t *testing.T) {
			h.eventually(t, "a non-empty log", func() (bool, string) {
				rc, err := lp.GetContainerLogs(ctx, pod.Namespace, pod.Name, "main", v1.PodLogOptions{})
				if err != nil {
					return false, err.Error()
				}
				defer rc.Close()
				b, err := io.ReadAll(rc)
				return err == nil && len(b) > 0, fmt.Sprintf("%q %v", b, err)
			})
			if _, err := lp.GetContainerLogs(ctx, pod.Namespace, "pt-no-such-pod", "main", v1.PodLogOptions{}); !errdefs.IsNotFound(err) {
				t.Errorf("logs of an unknown pod: %v, want NotFound", err)
			}
		})
	}
	if ep, ok := p.(provider.ExecProvider); ok {
		t.Run("Exec", func(t *testing.T) {
			var out, errOut closeBuffer
			err := ep.RunInContainer(ctx, pod.Namespace, pod.Name, "main", []string{"echo", "providertest-exec"}, provider.AttachIO{Stdout: &out, Stderr: &errOut})
			if err != nil {
				t.Fatalf("exec: %v (stderr %q)", err, errOut.String())
			}
			if !strings.Contains(out.String(), "providertest-exec") {
				t.Errorf("exec stdout = %q, want it to contain providertest-exec", out.String())
			}
			var sink closeBuffer
			err = ep.RunInContainer(ctx, pod.Namespace, pod.Name, "main", []string{"sh", "-c", "exit 3"}, provider.AttachIO{Stdout: &sink, Stderr: &sink})
			if err == nil {
				t.Errorf("a command exiting 3 returned no error")
			} else if ee, ok := err.(interface{ ExitStatus() int }); !ok || ee.ExitStatus() != 3 {
				t.Errorf("a command exiting 3: %v (%T), want an exit error with status 3", err, err)
			}
		})
	}
	if pp, ok := p.(provider.PortForwardProvider); ok {
		t.Run("PortForward", func(t *testing.T) {
			local, remote := net.Pipe()
			done := make(chan error, 1)
			go func() { done <- pp.PortForward(ctx, pod.Namespace, pod.Name, h.EchoPort, remote) }()
			var got []byte
			h.eventually(t, "the echo through port-forward", func() (bool, string) {
				_ = local.SetDeadline(time.Now().Add(2 * time.Second))
				if _, err := local.Write([]byte("providertest-pf\n")); err != nil {
					return false, err.Error()
				}
				buf := make([]byte, 64)
				n, err := local.Read(buf)
				got = append(got, buf[:n]...)
				return strings.Contains(string(got), "providertest-pf"), fmt.Sprintf("%q %v", got, err)
			})
			local.Close()
			select {
			case <-done:
			case <-time.After(h.Timeout):
				t.Errorf("PortForward did not return after the client closed")
			}
		})
	}
}
