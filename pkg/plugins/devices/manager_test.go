package devices

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/plugins/devices/checkpoint"
)

// fakePlugin is a device plugin for unit tests: it serves on a socket in
// the manager's directory and lists what it is told to.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	socket   string
	opts     *pluginapi.DevicePluginOptions
	lists    chan []*pluginapi.Device
	allocate func(*pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error)
	srv      *grpc.Server

	mu        sync.Mutex
	preStarts [][]string
	streamEnd chan struct{}
}

func startFakePlugin(t *testing.T, dir, name string, opts *pluginapi.DevicePluginOptions) *fakePlugin {
	t.Helper()
	p := &fakePlugin{socket: filepath.Join(dir, name), opts: opts, lists: make(chan []*pluginapi.Device, 4), streamEnd: make(chan struct{}, 4)}
	p.allocate = func(r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		ids := r.ContainerRequests[0].DevicesIds
		return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{
			Envs: map[string]string{"DEVICES": strings.Join(ids, ",")},
		}}}, nil
	}
	l, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	p.srv = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.srv, p)
	go p.srv.Serve(l)
	t.Cleanup(p.srv.Stop)
	return p
}

func (p *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return p.opts, nil
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	defer func() { p.streamEnd <- struct{}{} }()
	for {
		select {
		case devs := <-p.lists:
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func (p *fakePlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	return p.allocate(r)
}

func (p *fakePlugin) PreStartContainer(_ context.Context, r *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preStarts = append(p.preStarts, r.DevicesIds)
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *fakePlugin) GetPreferredAllocation(_ context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	ids := r.ContainerRequests[0].AvailableDeviceIDs
	return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: ids[len(ids)-1:]}}}, nil
}

// register asks the manager to take the plugin, as a plugin does.
func register(m *Manager, resource, endpoint, version string) error {
	conn, err := grpc.NewClient("unix://"+m.Socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{Version: version, Endpoint: endpoint, ResourceName: resource}, grpc.WaitForReady(true))
	return err
}

type harness struct {
	mu      sync.Mutex
	changed []types.UID
	m       *Manager
	dir     string
	clock   *clocktesting.FakeClock
	active  []*v1.Pod
	cancel  context.CancelFunc
	done    chan error
}

func newHarness(t *testing.T, dir string, opts ...func(*Options)) *harness {
	t.Helper()
	h := &harness{dir: dir, clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), done: make(chan error, 1)}
	o := Options{Dir: dir, Clock: h.clock, ActivePods: func() []*v1.Pod { return h.active }, PodsChanged: func(uids []types.UID) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.changed = append(h.changed, uids...)
	}}
	for _, f := range opts {
		f(&o)
	}
	h.m = New(o)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.m.Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(h.m.Socket()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("registration socket never appeared")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// waitFor polls cond (the manager's state changes on its own goroutines).
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %s", what, seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) capacityIs(t *testing.T, res string, capacity, allocatable int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s at %d/%d", res, capacity, allocatable), func() (bool, string) {
		c, a := h.m.Capacity()
		cq, aq := c[v1.ResourceName(res)], a[v1.ResourceName(res)]
		_, present := c[v1.ResourceName(res)]
		return present && cq.Value() == capacity && aq.Value() == allocatable, fmt.Sprintf("capacity %v allocatable %v", c, a)
	})
}

func podAsking(uid, res string, n int64) *v1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceName(res): q}, Requests: v1.ResourceList{v1.ResourceName(res): q},
		}}}},
	}
}

const res = "example.com/dev"

func TestAllocationFromRegistrationToRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir)
	p := startFakePlugin(t, dir, "p.sock", &pluginapi.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true})
	if err := register(h.m, res, "p.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	p.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("d2", pluginapi.Healthy), dev("d3", pluginapi.Unhealthy)}
	h.capacityIs(t, res, 3, 2)

	a := podAsking("a", res, 1)
	h.active = []*v1.Pod{a}
	if ok, reason, msg := h.m.Admit(a); !ok {
		t.Fatalf("Admit refused: %s %s", reason, msg)
	}
	// The plugin prefers the last available device.
	o, err := h.m.ContainerOptions(context.Background(), a, &a.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Envs) != 1 || o.Envs[0] != (KeyValue{"DEVICES", "d2"}) {
		t.Fatalf("run options = %+v, want DEVICES=d2", o)
	}
	p.mu.Lock()
	if len(p.preStarts) != 1 || p.preStarts[0][0] != "d2" {
		t.Errorf("PreStartContainer calls = %v", p.preStarts)
	}
	p.mu.Unlock()

	// The container's status shows its device's health; a change of the
	// device's health resyncs the pod and shows in its status.
	st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c"}, {Name: "other"}}}
	h.m.SetResourcesStatus(a, st)
	want := []v1.ResourceStatus{{Name: res, Resources: []v1.ResourceHealth{{ResourceID: "d2", Health: v1.ResourceHealthStatusHealthy}}}}
	if !reflect.DeepEqual(st.ContainerStatuses[0].AllocatedResourcesStatus, want) || st.ContainerStatuses[1].AllocatedResourcesStatus != nil {
		t.Errorf("allocatedResourcesStatus = %+v", st.ContainerStatuses)
	}
	p.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("d2", pluginapi.Unhealthy), dev("d3", pluginapi.Unhealthy)}
	waitFor(t, "a resynced for d2's health", func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.changed) == 1 && h.changed[0] == "a", fmt.Sprint(h.changed)
	})
	h.m.SetResourcesStatus(a, st)
	if got := st.ContainerStatuses[0].AllocatedResourcesStatus; len(got) != 1 || got[0].Resources[0].Health != v1.ResourceHealthStatusUnhealthy {
		t.Errorf("after d2 went unhealthy: %+v", got)
	}
	p.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("d2", pluginapi.Healthy), dev("d3", pluginapi.Unhealthy)}
	h.capacityIs(t, res, 3, 2)

	// Two more do not fit: d3 is unhealthy.
	b := podAsking("b", res, 2)
	h.active = []*v1.Pod{a, b}
	ok, reason, msg := h.m.Admit(b)
	if ok || reason != ReasonUnexpectedAdmissionError || !strings.Contains(msg, "requested number of devices unavailable for example.com/dev. Requested: 2, Available: 1") {
		t.Fatalf("Admit(b) = %v %q %q", ok, reason, msg)
	}
	if got := h.m.ContainerDevices("b", "c"); len(got) != 0 {
		t.Errorf("refused pod holds %v", got)
	}

	// A restarted manager finds the assignment in the checkpoint.
	h.stop()
	h2 := newHarness(t, dir)
	got := h2.m.ContainerDevices("a", "c")
	if len(got) != 1 || got[0].DeviceIds[0] != "d2" || got[0].ResourceName != res {
		t.Fatalf("after restart a holds %v", got)
	}
	// The plugin's socket was removed at start, as upstream does, so the
	// plugin registers again; until then nothing is allocatable.
	if _, err := os.Stat(p.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale plugin socket left: %v", err)
	}
	h2.capacityIs(t, res, 0, 0)
	entries, registered, err := checkpoint.Read(dir)
	if err != nil || len(entries) != 1 || entries[0].PodUID != "a" || len(registered[res]) != 2 {
		t.Errorf("checkpoint = %v %v %v", entries, registered, err)
	}

	// A pod that has finished frees its devices at the next allocation.
	p2 := startFakePlugin(t, dir, "p2.sock", &pluginapi.DevicePluginOptions{})
	if err := register(h2.m, res, "p2.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	p2.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("d2", pluginapi.Healthy)}
	h2.capacityIs(t, res, 2, 2)
	c := podAsking("c", res, 2)
	h2.active = []*v1.Pod{c}
	if ok, reason, msg := h2.m.Admit(c); !ok {
		t.Fatalf("Admit(c) refused: %s %s", reason, msg)
	}
	if got := h2.m.ContainerDevices("a", "c"); len(got) != 0 {
		t.Errorf("a finished but holds %v", got)
	}
}

func TestPluginFaults(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir)
	p := startFakePlugin(t, dir, "p.sock", &pluginapi.DevicePluginOptions{})
	if err := register(h.m, res, "p.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	// Garbage in the list: the good devices are kept.
	p.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("", pluginapi.Healthy), dev("d1", pluginapi.Healthy), dev("d2", "??"), nil}
	h.capacityIs(t, res, 1, 1)
	// 10,000 devices.
	many := make([]*pluginapi.Device, 10000)
	for i := range many {
		many[i] = dev(fmt.Sprintf("d%d", i), pluginapi.Healthy)
	}
	p.lists <- many
	h.capacityIs(t, res, 10000, 10000)

	refused := func(name, want string) {
		t.Helper()
		pod := podAsking(name, res, 1)
		h.active = []*v1.Pod{pod}
		ok, reason, msg := h.m.Admit(pod)
		if ok || reason != ReasonUnexpectedAdmissionError || !strings.Contains(msg, want) {
			t.Errorf("Admit(%s) = %v %q %q, want a refusal naming %q", name, ok, reason, msg, want)
		}
		if got := h.m.ContainerDevices(name, "c"); len(got) != 0 {
			t.Errorf("%s was refused but holds %v", name, got)
		}
	}
	p.allocate = func(*pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		return nil, errors.New("device on fire")
	}
	refused("fails", "device on fire")
	p.allocate = func(*pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		return &pluginapi.AllocateResponse{}, nil
	}
	refused("empty", "no containers return in allocation response")
	p.allocate = func(*pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{Mounts: []*pluginapi.Mount{{ContainerPath: "rel", HostPath: "/x"}}}}}, nil
	}
	refused("garbage", "invalid Allocate answer")

	p.allocate = func(r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{
			Envs: map[string]string{"BY": "p"},
		}}}, nil
	}

	// A second plugin of the resource, on another socket, serves it too
	// (upstream 1.37): the first stays connected, the last list of either
	// is the resource's, and the new one takes the allocations.
	p2 := startFakePlugin(t, dir, "p2.sock", &pluginapi.DevicePluginOptions{})
	if err := register(h.m, res, "p2.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	p2.lists <- []*pluginapi.Device{dev("x", pluginapi.Healthy)}
	h.capacityIs(t, res, 1, 1)
	p.lists <- []*pluginapi.Device{dev("x", pluginapi.Healthy), dev("y", pluginapi.Healthy)}
	h.capacityIs(t, res, 2, 2)
	p2.lists <- []*pluginapi.Device{dev("x", pluginapi.Healthy)}
	h.capacityIs(t, res, 1, 1)
	allocatedBy := func(name, want string) {
		t.Helper()
		pod := podAsking(name, res, 1)
		h.active = []*v1.Pod{pod}
		if ok, reason, msg := h.m.Admit(pod); !ok {
			t.Fatalf("Admit(%s) refused: %s %s", name, reason, msg)
		}
		o, err := h.m.ContainerOptions(context.Background(), pod, &pod.Spec.Containers[0])
		if err != nil {
			t.Fatal(err)
		}
		if by := fmt.Sprint(o.Envs); !strings.Contains(by, want) {
			t.Errorf("%s allocated with %s, want from the plugin setting %s", name, by, want)
		}
	}
	allocatedBy("second", "DEVICES x")

	// The serving one goes: the first serves again, nothing changes on
	// the Node.
	p2.srv.Stop()
	waitFor(t, "the first plugin serving again", func() (bool, string) {
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		r := h.m.resources[res]
		return r.endpoint != nil && r.endpoint.socket == p.socket && len(r.standby) == 0, fmt.Sprintf("%+v", r)
	})
	h.capacityIs(t, res, 1, 1)
	allocatedBy("first-again", "BY p")

	// The same plugin registering again on its socket replaces its
	// connection (the old stream is closed, upstream issue 124716).
	if err := register(h.m, res, "p.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.streamEnd:
	case <-time.After(5 * time.Second):
		t.Fatal("the replaced connection's stream was not closed")
	}
	p.lists <- []*pluginapi.Device{dev("x", pluginapi.Healthy)}
	h.capacityIs(t, res, 1, 1)

	// The last plugin dies: nothing allocatable, capacity kept for the
	// grace period, then 0.
	p.srv.Stop()
	h.capacityIs(t, res, 1, 0)
	refused("after", "no healthy devices present")
	h.clock.Step(DefaultGracePeriod)
	h.capacityIs(t, res, 0, 0)
	h.capacityIs(t, res, 0, 0) // and stays reported at 0
}

func TestRegistrationIsChecked(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir)
	for _, tc := range []struct{ res, endpoint, version, want string }{
		{res, "p.sock", "v1alpha", "not supported"},
		{"cpu", "p.sock", pluginapi.Version, "invalid"},
		{"kubernetes.io/gpu", "p.sock", pluginapi.Version, "invalid"},
		{res, "../p.sock", pluginapi.Version, "not the name of a socket"},
		{res, "absent.sock", pluginapi.Version, "absent.sock"},
	} {
		err := register(h.m, tc.res, tc.endpoint, tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%s, %s, %s) = %v, want %q", tc.res, tc.endpoint, tc.version, err, tc.want)
		}
	}
	if c, _ := h.m.Capacity(); len(c) != 0 {
		t.Errorf("refused registrations left resources: %v", c)
	}
}

// A restarted kubelet finds assignments in the checkpoint. A pod the
// runtime still runs keeps its devices before its plugin is back (a
// kubelet restart); a pod the runtime lost (a node reboot) is refused
// until the plugin serves those devices healthy again.
func TestHeldDevicesAfterRestartOrReboot(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir)
	p := startFakePlugin(t, dir, "p.sock", &pluginapi.DevicePluginOptions{})
	if err := register(h.m, res, "p.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	p.lists <- []*pluginapi.Device{dev("d1", pluginapi.Healthy), dev("d2", pluginapi.Healthy)}
	h.capacityIs(t, res, 2, 2)
	running, lost := podAsking("running", res, 1), podAsking("lost", res, 1)
	h.active = []*v1.Pod{running, lost}
	for _, pod := range h.active {
		if ok, reason, msg := h.m.Admit(pod); !ok {
			t.Fatalf("Admit(%s) refused: %s %s", pod.Name, reason, msg)
		}
	}
	h.stop()

	for _, tc := range []struct {
		name        string
		runningPods func(context.Context) (sets.Set[types.UID], error)
		// refused are the pods refused at their admission after the start.
		refused []string
	}{
		{"the runtime runs one of them", func(context.Context) (sets.Set[types.UID], error) { return sets.New[types.UID]("running"), nil }, []string{"lost"}},
		{"the runtime cannot tell", func(context.Context) (sets.Set[types.UID], error) { return nil, errors.New("runtime down") }, nil},
		{"no runtime lister", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := copyCheckpoint(t, dir)
			h := newHarness(t, d, func(o *Options) { o.RunningPods = tc.runningPods })
			h.active = []*v1.Pod{running, lost}
			var refused []string
			for _, pod := range h.active {
				ok, reason, msg := h.m.Admit(pod)
				if ok {
					continue
				}
				refused = append(refused, pod.Name)
				if reason != ReasonUnexpectedAdmissionError || !strings.Contains(msg, "no healthy devices present; cannot allocate unhealthy devices "+res) {
					t.Errorf("Admit(%s) = %q %q", pod.Name, reason, msg)
				}
				if got := h.m.ContainerDevices(pod.Name, "c"); len(got) != 0 {
					t.Errorf("refused pod %s still holds %v", pod.Name, got)
				}
			}
			if !reflect.DeepEqual(refused, tc.refused) {
				t.Fatalf("refused %v, want %v", refused, tc.refused)
			}
			for _, pod := range h.active {
				if slices.Contains(refused, pod.Name) {
					continue
				}
				if got := h.m.ContainerDevices(pod.Name, "c"); len(got) != 1 {
					t.Errorf("admitted pod %s holds %v", pod.Name, got)
				}
			}
		})
	}

	// The lost pod is admitted again once its plugin serves its device
	// healthy, and refused while that device is unhealthy.
	d := copyCheckpoint(t, dir)
	h2 := newHarness(t, d, func(o *Options) {
		o.RunningPods = func(context.Context) (sets.Set[types.UID], error) { return sets.New[types.UID](), nil }
	})
	held := h2.m.ContainerDevices("lost", "c")[0].DeviceIds[0]
	p2 := startFakePlugin(t, d, "p2.sock", &pluginapi.DevicePluginOptions{})
	if err := register(h2.m, res, "p2.sock", pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"d1": "d2", "d2": "d1"}[held]
	p2.lists <- []*pluginapi.Device{dev(held, pluginapi.Unhealthy), dev(other, pluginapi.Healthy)}
	h2.capacityIs(t, res, 2, 1)
	h2.active = []*v1.Pod{lost}
	if ok, _, msg := h2.m.Admit(lost); ok || !strings.Contains(msg, "previously allocated devices are no longer healthy") {
		t.Fatalf("Admit(lost) with its device unhealthy = %v %q", ok, msg)
	}
}

// copyCheckpoint is a new plugin directory holding dir's checkpoint: a
// restarted kubelet's, once per case.
func copyCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	d := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, checkpoint.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, checkpoint.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}
