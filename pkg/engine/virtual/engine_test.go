package virtual

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/errdefs"
	"github.com/gokubelet/kubelet/pkg/node"
	"github.com/gokubelet/kubelet/pkg/node/nodestatus"
	"github.com/gokubelet/kubelet/pkg/provider"
	"github.com/gokubelet/kubelet/pkg/providers/mock"
	"github.com/gokubelet/kubelet/pkg/runnable"
)

const nodeName = "vn-1"

// harness runs one virtual node on a fake API server and a provider.
type harness struct {
	// watching is closed once the engine watches pods (the fake API
	// server drops what is created between its list and its watch).
	watching chan struct{}
	t        *testing.T
	client   *fake.Clientset
	prov     provider.Provider
	core     *node.Core
	eng      *Engine
}

func fakeAPI(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			o.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Add(1))))
		}
		return false, nil, nil
	})
	return c
}

func fastMock() mock.Config {
	return mock.Config{StartDelay: metav1.Duration{Duration: 5 * time.Millisecond}, StopDelay: metav1.Duration{Duration: 20 * time.Millisecond}}
}

func start(t *testing.T, client *fake.Clientset, prov provider.Provider, cfg Config, objs ...runtime.Object) *harness {
	t.Helper()
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	ctx, cancel := context.WithCancel(context.Background())
	cfg.NodeName = nodeName
	cfg.ProviderType = "mock"
	cfg.HostIPs = []string{"192.0.2.10"}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 10 * time.Millisecond
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 100 * time.Millisecond
	}
	if cfg.DeleteCheckInterval == 0 {
		cfg.DeleteCheckInterval = 20 * time.Millisecond
	}
	core, err := node.New(ctx, node.Options{
		Config:       nodestatus.Config{NodeName: nodeName, Hostname: nodeName, KubeletVersion: "v1.37.2", KubeletPort: 10260},
		Facts:        &Facts{Provider: prov, ProviderType: "mock", NodeName: nodeName, HostIPs: cfg.HostIPs},
		Clients:      &node.Clients{Kube: client, Events: client},
		RegisterNode: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(cfg, Deps{Core: core, Client: client, Provider: prov})
	if err != nil {
		t.Fatal(err)
	}
	var g runnable.Group
	core.AddTo(g.Stage("core"))
	eng.AddTo(g.Stage("engine"), g.Stage("workers"))
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("group: %v", err)
		}
		core.Shutdown()
	})
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine never watched pods")
	}
	return &harness{t: t, client: client, prov: prov, core: core, eng: eng, watching: watching}
}

func newMockHarness(t *testing.T, mc mock.Config, cfg Config, objs ...runtime.Object) (*harness, *mock.Provider) {
	m := mock.NewWithConfig(nodeName, mc)
	client := fakeAPI(objs...)
	return start(t, client, m, cfg), m
}

// workersIdle waits until every pod worker waits for work: what was queued
// before has been synced.
func workersIdle(t *testing.T) {
	t.Helper()
	eventually.Seen(t, "the pod workers idle", func() (bool, string) {
		return eventually.Settled("virtual.(*Engine).runWorkers")
	})
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1.PodSpec{NodeName: nodeName, RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{{Name: "main", Image: "img"}}},
		Status: v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}},
	}
}

func (h *harness) create(p *v1.Pod) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get(name string) (*v1.Pod, error) {
	return h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
}

func (h *harness) waitPhase(name string, phase v1.PodPhase) *v1.Pod {
	h.t.Helper()
	var got *v1.Pod
	eventually.Seen(h.t, name+" "+string(phase)+" in the API", func() (bool, string) {
		p, err := h.get(name)
		if err != nil {
			return false, err.Error()
		}
		got = p
		return p.Status.Phase == phase, fmt.Sprintf("%+v", p.Status)
	})
	return got
}

// deleteGracefully does what the API server does on a graceful delete:
// deletionTimestamp = now + grace.
func (h *harness) deleteGracefully(name string, grace int64) {
	h.t.Helper()
	p, err := h.get(name)
	if err != nil {
		h.t.Fatal(err)
	}
	ts := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) events(reason string) []string {
	list, _ := h.client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// podWrites are the kubelet's writes to pods: verb/subresource.
func (h *harness) podWrites() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+"/"+a.GetSubresource())
	}
	return out
}

// A pod bound to the virtual node runs in the provider; its status
// reaches the API as PATCHes of pods/status, complete as a kubelet's.
func TestPodRunsAndStatusIsPatched(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{})
	h.create(testPod("web"))
	p := h.waitPhase("web", v1.PodRunning)
	if p.Status.PodIP == "" || p.Status.HostIP != "192.0.2.10" || p.Status.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("status = %+v", p.Status)
	}
	eventually.Seen(t, "Ready True", func() (bool, string) {
		p, _ := h.get("web")
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status == v1.ConditionTrue, fmt.Sprint(p.Status.Conditions)
			}
		}
		return false, fmt.Sprint(p.Status.Conditions)
	})
	if m.Calls("CreatePod") != 1 {
		t.Errorf("CreatePod called %d times, want 1", m.Calls("CreatePod"))
	}
	for _, w := range h.podWrites() {
		// The creation above is the test's; the kubelet only patches status.
		if w != "create/" && w != "patch/status" {
			t.Errorf("pod write %s: the kubelet writes pods only as status PATCHes", w)
		}
	}
	if n := m.Calls("GetPod"); n != 0 {
		t.Errorf("GetPod called %d times for a pod that only started: status must come from the notifier", n)
	}
}

// Graceful deletion: provider delete, then the terminal status and the
// final API delete with a UID precondition once the provider reports the
// pod gone.
func TestGracefulDeletion(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{})
	h.create(testPod("web"))
	h.waitPhase("web", v1.PodRunning)
	h.deleteGracefully("web", 30)
	eventually.Seen(t, "the API pod deleted", func() (bool, string) {
		_, err := h.get("web")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if m.Calls("DeletePod") != 1 {
		t.Errorf("DeletePod called %d times, want 1", m.Calls("DeletePod"))
	}
	var final k8stesting.DeleteActionImpl
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && a.GetResource().Resource == "pods" {
			final = d
		}
	}
	opts := final.GetDeleteOptions()
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "uid-web" ||
		opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		t.Errorf("final delete options = %+v, want grace 0 and a UID precondition", opts)
	}
	if _, err := m.GetPod(context.Background(), "default", "web"); err == nil {
		t.Error("the provider still runs the deleted pod")
	}
	eventually.Seen(t, "the engine forgets the pod", func() (bool, string) {
		h.eng.mu.Lock()
		defer h.eng.mu.Unlock()
		return len(h.eng.pods) == 0 && len(h.eng.byUID) == 0, fmt.Sprint(len(h.eng.pods))
	})
}

// When the provider cannot delete, the pod still goes from the API once
// its grace period ends, and the failure is shown as events.
func TestGracePeriodEndsWhileProviderFails(t *testing.T) {
	mc := fastMock()
	mc.FailureRate.Delete = 1
	h, _ := newMockHarness(t, mc, Config{})
	h.create(testPod("web"))
	h.waitPhase("web", v1.PodRunning)
	h.deleteGracefully("web", 1)
	eventually.Seen(t, "the API pod deleted after its grace period", func() (bool, string) {
		_, err := h.get("web")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if len(h.events(ReasonDeleteFailed)) == 0 {
		t.Error("no ProviderDeleteFailed event")
	}
}

// A provider that fails creates: the pod shows why (reason, message,
// event), the create is retried with back-off, and the pod runs once the
// provider recovers.
func TestCreateFailureShownAndRetried(t *testing.T) {
	mc := fastMock()
	mc.FailureRate.Create = 1
	h, m := newMockHarness(t, mc, Config{})
	h.create(testPod("web"))
	eventually.Seen(t, "the failure on the pod", func() (bool, string) {
		p, err := h.get("web")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == ReasonCreateFailed && strings.Contains(w.Message, "injected failure"), fmt.Sprintf("%+v", p.Status)
	})
	eventually.Seen(t, "several attempts", func() (bool, string) { return m.Calls("CreatePod") >= 3, fmt.Sprint(m.Calls("CreatePod")) })
	eventually.Seen(t, "a ProviderCreateFailed event", func() (bool, string) {
		ev := h.events(ReasonCreateFailed)
		return len(ev) > 0 && strings.Contains(ev[0], "injected failure"), fmt.Sprint(ev)
	})
	if p, _ := h.get("web"); p.Status.Phase != v1.PodPending {
		t.Errorf("phase while retrying = %s, want Pending", p.Status.Phase)
	}
	m.SetFailureRate(0)
	h.waitPhase("web", v1.PodRunning)
}

// A create the provider refuses as invalid fails the pod, once.
func TestInvalidCreateFailsPod(t *testing.T) {
	mc := fastMock()
	mc.FailureRate.Create, mc.FailureClass = 1, mock.ClassInvalid
	h, m := newMockHarness(t, mc, Config{})
	h.create(testPod("web"))
	p := h.waitPhase("web", v1.PodFailed)
	if p.Status.Reason != ReasonCreateFailed || !strings.Contains(p.Status.Message, "injected failure") {
		t.Errorf("status = %s %q", p.Status.Reason, p.Status.Message)
	}
	// Once the workers wait for work, a wrongly queued retry is either
	// waiting out its back-off (counted as a requeue) or done.
	workersIdle(t)
	if n := h.eng.queue.NumRequeues(keyOf("default", "web")); n != 0 {
		t.Errorf("the pod's sync was queued again %d times after an invalid create", n)
	}
	if n := m.Calls("CreatePod"); n != 1 {
		t.Errorf("CreatePod called %d times, want 1 (an invalid pod is not retried)", n)
	}
}

// Pods the provider runs for this node that the API does not have are
// deleted from the provider; another node's pods in the same backend are
// never touched.
func TestOrphansOfThisNodeOnly(t *testing.T) {
	m := mock.NewWithConfig(nodeName, fastMock())
	ctx := context.Background()
	orphan := testPod("orphan")
	other := testPod("other")
	other.Spec.NodeName = "someone-else"
	for _, p := range []*v1.Pod{orphan, other} {
		if err := m.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	h := start(t, fakeAPI(), m, Config{ResyncInterval: 50 * time.Millisecond})
	eventually.Seen(t, "the orphan deleted from the provider", func() (bool, string) {
		_, err := m.GetPod(ctx, "default", "orphan")
		return err != nil, fmt.Sprint(err)
	})
	// A list that began after the orphan went has ended once the next one
	// begins; what it queued is done once the workers wait again.
	lists := m.Calls("ListPods")
	eventually.True(t, "two more lists of the provider's pods", func() bool { return m.Calls("ListPods") >= lists+2 })
	workersIdle(t)
	if _, err := m.GetPod(ctx, "default", "other"); err != nil {
		t.Errorf("another node's pod was deleted: %v", err)
	}
	_ = h
}

// A restarted kubelet adopts what the provider runs: no second create.
func TestAdoptsWhatTheProviderRuns(t *testing.T) {
	m := mock.NewWithConfig(nodeName, fastMock())
	pod := testPod("web")
	if err := m.CreatePod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h := start(t, fakeAPI(pod), m, Config{})
	h.waitPhase("web", v1.PodRunning)
	if n := m.Calls("CreatePod"); n != 1 {
		t.Errorf("CreatePod called %d times, want only the one before the start", n)
	}
}

// A pod the provider lost (no longer listed) fails with ProviderPodLost.
func TestLostPodFails(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{ResyncInterval: 30 * time.Millisecond})
	h.create(testPod("web"))
	h.waitPhase("web", v1.PodRunning)
	m.Lose("default", "web")
	p := h.waitPhase("web", v1.PodFailed)
	if p.Status.Reason != ReasonPodLost {
		t.Errorf("reason = %q, want %s", p.Status.Reason, ReasonPodLost)
	}
	if cs := p.Status.ContainerStatuses[0]; cs.State.Terminated == nil {
		t.Errorf("container state = %+v, want terminated", cs.State)
	}
}

// Without a notifier the provider is polled with ListPods: statuses still
// arrive, and never through a GET per pod.
func TestPollingFallback(t *testing.T) {
	raw, err := mock.New(context.Background(), provider.InitConfig{NodeName: nodeName, Config: []byte(`{"notifier": false, "startDelay": "5ms"}`)})
	if err != nil {
		t.Fatal(err)
	}
	m := raw.(mock.Polled).Mock()
	h := start(t, fakeAPI(), raw, Config{PollInterval: 20 * time.Millisecond})
	for i := range 5 {
		h.create(testPod(fmt.Sprintf("web-%d", i)))
	}
	for i := range 5 {
		h.waitPhase(fmt.Sprintf("web-%d", i), v1.PodRunning)
	}
	if m.Calls("GetPod") != 0 {
		t.Errorf("GetPod called %d times; polling must list", m.Calls("GetPod"))
	}
	if m.Calls("ListPods") < 2 {
		t.Errorf("ListPods called %d times", m.Calls("ListPods"))
	}
}

// A pod deleted at once and re-created under the same name: the old
// incarnation leaves the provider, then the new one is created.
func TestRecreatedUnderTheSameName(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{})
	h.create(testPod("web"))
	h.waitPhase("web", v1.PodRunning)
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := testPod("web")
	again.UID = "uid-web-2"
	h.create(again)
	eventually.Seen(t, "the new incarnation in the provider", func() (bool, string) {
		p, err := m.GetPod(context.Background(), "default", "web")
		if err != nil {
			return false, err.Error()
		}
		return p.UID == "uid-web-2" && p.Status.Phase == v1.PodRunning, string(p.UID)
	})
	p := h.waitPhase("web", v1.PodRunning)
	if p.UID != "uid-web-2" {
		t.Errorf("API pod %s", p.UID)
	}
}

// inFlight wraps a provider and records the most CreatePod calls at once.
type inFlight struct {
	provider.Provider
	mu       sync.Mutex
	cur, max int
}

func (f *inFlight) CreatePod(ctx context.Context, p *v1.Pod) error {
	f.mu.Lock()
	f.cur++
	f.max = max(f.max, f.cur)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.cur--; f.mu.Unlock() }()
	return f.Provider.CreatePod(ctx, p)
}

func (f *inFlight) NotifyPods(ctx context.Context, n func(*v1.Pod)) {
	f.Provider.(provider.PodNotifier).NotifyPods(ctx, n)
}

// New pods are not throttled by a fixed queue rate: with a slow provider,
// the workers create in parallel (Virtual Kubelet's 10 items/s limiter
// held this to a handful).
func TestCreatesRunInParallel(t *testing.T) {
	mc := fastMock()
	mc.Latency.Create = metav1.Duration{Duration: 100 * time.Millisecond}
	m := mock.NewWithConfig(nodeName, mc)
	f := &inFlight{Provider: m}
	const n = 200
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, testPod(fmt.Sprintf("p-%03d", i)))
	}
	h := start(t, fakeAPI(objs...), f, Config{Workers: 50})
	eventually.Seen(t, "every pod created", func() (bool, string) { return m.Calls("CreatePod") >= n, fmt.Sprint(m.Calls("CreatePod")) })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.max < 25 {
		t.Errorf("at most %d creates ran at once with 50 workers; the queue throttles", f.max)
	}
	_ = h
}

// The provider gets the pod with its environment resolved from the API
// (ConfigMaps read with the node's client); a missing ConfigMap shows as
// CreateContainerConfigError until it appears.
func TestProviderGetsResolvedEnv(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{})
	pod := testPod("web")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}}}
	h.create(pod)
	eventually.Seen(t, "CreateContainerConfigError on the pod", func() (bool, string) {
		p, err := h.get("web")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == ReasonConfigError && strings.Contains(w.Message, `configmap "cfg" not found`), fmt.Sprintf("%+v", p.Status.ContainerStatuses)
	})
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(context.Background(),
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"mode": "fast"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("web", v1.PodRunning)
	got, err := m.GetPod(context.Background(), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if env := got.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "fast" || env[0].ValueFrom != nil {
		t.Errorf("provider's env = %+v", env)
	}
}

// The streams the kubelet API serves reach the provider for the node's
// pods, and refuse pods and containers that are not there.
func TestStreams(t *testing.T) {
	h, _ := newMockHarness(t, fastMock(), Config{})
	h.create(testPod("web"))
	h.waitPhase("web", v1.PodRunning)
	s := h.eng.Streams()
	pod, ok := h.core.Pods().Get("uid-web")
	if !ok {
		t.Fatal("pod not in the core")
	}
	ctx := context.Background()
	rc, err := s.ContainerLogs(ctx, pod, "main", &v1.PodLogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(b), "container main of pod default/web") {
		t.Errorf("logs = %q", b)
	}
	out, err := s.RunInContainer(ctx, pod, "main", []string{"echo", "hi"})
	if err != nil || string(out) != "hi\n" {
		t.Errorf("run = %q %v", out, err)
	}
	err = s.ExecInContainer(ctx, "web", "uid-web", "main", []string{"exit", "4"}, nil, nopWriteCloser{io.Discard}, nil, false, nil, 0)
	if ee, ok := err.(interface{ ExitStatus() int }); !ok || ee.ExitStatus() != 4 {
		t.Errorf("exec exit 4: %v", err)
	}
	if err := s.ExecInContainer(ctx, "web", "uid-web", "nope", []string{"true"}, nil, nil, nil, false, nil, 0); !errdefs.IsNotFound(err) {
		t.Errorf("exec in an unknown container: %v", err)
	}
	if err := s.PortForward(ctx, "x", "uid-other", 80, nopRWC{}); !errdefs.IsNotFound(err) {
		t.Errorf("port-forward to a pod not on the node: %v", err)
	}
	local, remote := net.Pipe()
	go func() { _ = s.PortForward(ctx, "web", "uid-web", 7000, remote) }()
	if _, err := local.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(local, buf); err != nil || string(buf) != "ping" {
		t.Errorf("port-forward echo = %q %v", buf, err)
	}
	local.Close()
	// A provider without a capability says so, classified terminal.
	bare := &Streams{e: &Engine{cfg: Config{ProviderType: "bare"}, prov: bareProvider{}, core: h.core}}
	if _, err := bare.ContainerLogs(ctx, pod, "main", nil); !errdefs.IsTerminal(err) || !errors.Is(err, provider.ErrUnsupported) {
		t.Errorf("logs from a provider without them: %v", err)
	}
}

type nopRWC struct{}

func (nopRWC) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopRWC) Write(b []byte) (int, error) { return len(b), nil }
func (nopRWC) Close() error                { return nil }

type bareProvider struct{ provider.Provider }

// Drain empties the provider of a removed node.
func TestDrain(t *testing.T) {
	m := mock.NewWithConfig(nodeName, fastMock())
	for i := range 3 {
		if err := m.CreatePod(context.Background(), testPod(fmt.Sprintf("p-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if left, err := Drain(ctx, m); err != nil || left != 0 {
		t.Fatalf("Drain = %d, %v", left, err)
	}
	if pods, _ := m.ListPods(ctx); len(pods) != 0 {
		t.Errorf("%d pods left", len(pods))
	}
}

// A readiness gate decides Ready: the pod runs in the provider, but stays
// not Ready until another controller sets the gate's condition in the
// status; then the engine writes Ready True (a status-only change by
// someone else is acted on), and the status it writes keeps that
// condition.
func TestReadinessGate(t *testing.T) {
	h, _ := newMockHarness(t, fastMock(), Config{})
	const gate = v1.PodConditionType("example.com/lb-ready")
	p := testPod("gated")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	h.create(p)
	ready := func(p *v1.Pod) v1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status
			}
		}
		return ""
	}
	eventually.Seen(t, "Running, Ready False (gate not set)", func() (bool, string) {
		p, _ := h.get("gated")
		return p.Status.Phase == v1.PodRunning && ready(p) == v1.ConditionFalse, fmt.Sprint(p.Status.Phase, p.Status.Conditions)
	})
	cur, err := h.get("gated")
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.Conditions = append(cur.Status.Conditions, v1.PodCondition{Type: gate, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Seen(t, "Ready True once the gate is True", func() (bool, string) {
		p, _ := h.get("gated")
		has := false
		for _, c := range p.Status.Conditions {
			has = has || (c.Type == gate && c.Status == v1.ConditionTrue)
		}
		return has && ready(p) == v1.ConditionTrue, fmt.Sprint(p.Status.Conditions)
	})
}

func TestSyncNeeded(t *testing.T) {
	base := func() *v1.Pod {
		p := testPod("a")
		p.ResourceVersion = "1"
		p.Labels = map[string]string{"app": "a"}
		p.Status = v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}
		return p
	}
	grace := int64(30)
	now := metav1.Now()
	for name, c := range map[string]struct {
		mut  func(p *v1.Pod)
		want bool
	}{
		"our status written back": {func(p *v1.Pod) {
			p.ResourceVersion = "2"
			p.Status.Phase, p.Status.PodIP = v1.PodRunning, "10.0.0.1"
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "main", Ready: true}}
		}, false},
		"managed fields only": {func(p *v1.Pod) { p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}} }, false},
		"spec changed":        {func(p *v1.Pod) { p.Spec.Containers[0].Image = "img:2" }, true},
		"generation":          {func(p *v1.Pod) { p.Generation = 2 }, true},
		"label":               {func(p *v1.Pod) { p.Labels["tier"] = "web" }, true},
		"annotation":          {func(p *v1.Pod) { p.Annotations = map[string]string{"a": "b"} }, true},
		"deletion":            {func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace }, true},
		"another incarnation": {func(p *v1.Pod) { p.UID = "uid-other" }, true},
		"others' condition added": {func(p *v1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionFalse})
		}, true},
		"owned condition only":      {func(p *v1.Pod) { p.Status.Conditions[0].LastTransitionTime = now }, false},
		"others' condition flipped": {func(p *v1.Pod) {}, true}, // set up below
	} {
		old, cur := base(), base()
		if name == "others' condition flipped" {
			old.Status.Conditions = append(old.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionFalse})
			cur.Status.Conditions = append(cur.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
		}
		c.mut(cur)
		if got := syncNeeded(old, cur); got != c.want {
			t.Errorf("%s: syncNeeded = %v, want %v", name, got, c.want)
		}
	}
}

// A pod whose environment refers to a missing optional Secret runs without
// the variable and says so with an event; one that needs a missing
// ConfigMap waits with CreateContainerConfigError and an event of its own,
// and runs once the ConfigMap exists (Virtual Kubelet's event reasons).
func TestMissingEnvReferencesAreReported(t *testing.T) {
	h, m := newMockHarness(t, fastMock(), Config{})
	optional := testPod("optional")
	optional.Spec.Containers[0].Env = []v1.EnvVar{{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "nosecret"}, Key: "k", Optional: ptr.To(true)}}}}
	mandatory := testPod("mandatory")
	mandatory.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}}
	h.create(optional)
	h.create(mandatory)
	h.waitPhase("optional", v1.PodRunning)
	eventually.Seen(t, "the events", func() (bool, string) {
		o, mm := h.events(ReasonOptionalSecretNotFound), h.events(ReasonMandatoryConfigMapNotFound)
		return len(o) == 1 && strings.Contains(o[0], `secret "nosecret" not found: variable S of container main left out`) &&
			len(mm) == 1 && strings.Contains(mm[0], `configmap "later" not found: envFrom of container main needs it`), fmt.Sprint(o, mm)
	})
	eventually.Seen(t, "the mandatory pod waiting", func() (bool, string) {
		p, err := h.get("mandatory")
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == ReasonConfigError, fmt.Sprintf("%+v", p.Status)
	})
	if _, err := m.GetPod(context.Background(), "default", "mandatory"); !errdefs.IsNotFound(err) {
		t.Error("the pod that needs a missing ConfigMap reached the provider")
	}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(context.Background(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}, Data: map[string]string{"A": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("mandatory", v1.PodRunning)
}
