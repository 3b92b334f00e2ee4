package dra

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// fakeDriver is a DRA driver for unit tests: it prepares every claim with
// one device whose CDI ID names the claim.
type fakeDriver struct {
	drapb.UnimplementedDRAPluginServer
	mu         sync.Mutex
	prepared   []string
	unprepared []string
	hang       bool
}

func (d *fakeDriver) NodePrepareResources(ctx context.Context, r *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	if d.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range r.Claims {
		d.prepared = append(d.prepared, c.Name)
		out.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{PoolName: "p", DeviceName: "dev", CdiDeviceIds: []string{"drv.example.com/dev=" + c.Name}}}}
	}
	return out, nil
}

func (d *fakeDriver) NodeUnprepareResources(_ context.Context, r *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range r.Claims {
		d.unprepared = append(d.unprepared, c.Name)
		out.Claims[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
	}
	return out, nil
}

// serveDriver serves a fake DRA driver on dir/drv.sock until the test
// ends, with the extra gRPC services (a health API) services register.
func serveDriver(t *testing.T, dir string, services ...func(*grpc.Server)) (*fakeDriver, string) {
	t.Helper()
	d := &fakeDriver{}
	sock := filepath.Join(dir, "drv.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	drapb.RegisterDRAPluginServer(s, d)
	for _, register := range services {
		register(s)
	}
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return d, sock
}

const drv = "drv.example.com"

func allocatedClaim(name string, reservedFor ...*v1.Pod) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "r", Driver: drv, Pool: "p", Device: "dev"}}}}
	for _, p := range reservedFor {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

func podUsing(name, claimName string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "c", ResourceClaimName: &claimName}}
	p.Spec.Containers = []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "c"}}}}}
	return p
}

func TestPrepareAndUnprepareASharedClaim(t *testing.T) {
	dir := t.TempDir()
	d, sock := serveDriver(t, dir)
	a, b := podUsing("a", "shared"), podUsing("b", "shared")
	client := fake.NewSimpleClientset(allocatedClaim("shared", a, b))
	m := New(Options{RootDir: dir, NodeName: "n", Client: client, WipingDelay: 10 * time.Millisecond})
	ctx := context.Background()

	// The driver is not registered yet: the pod waits, saying so.
	if err := m.PrepareResources(ctx, a); err == nil || !strings.Contains(err.Error(), "DRA driver drv.example.com is not registered") {
		t.Fatalf("PrepareResources without the driver = %v", err)
	}
	if err := m.ValidatePlugin(drv, sock, []string{"v1beta1.DRAPlugin"}); err == nil {
		t.Error("a driver without v1.DRAPlugin was accepted")
	}
	if err := m.ValidatePlugin(drv, sock, []string{drapb.DRAPluginService}); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterPlugin(ctx, drv, sock, []string{drapb.DRAPluginService}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{a, b} {
		if err := m.PrepareResources(ctx, p); err != nil {
			t.Fatalf("PrepareResources(%s): %v", p.Name, err)
		}
	}
	if len(d.prepared) != 1 {
		t.Errorf("the shared claim was prepared %d times, want once", len(d.prepared))
	}
	cdi, err := m.CDIDevices(a, &a.Spec.Containers[0])
	if err != nil || strings.Join(cdi, ",") != "drv.example.com/dev=shared" {
		t.Errorf("CDIDevices = %v, %v", cdi, err)
	}
	if dr := m.DynamicResources(a, "main"); len(dr) != 1 || dr[0].ClaimName != "shared" || dr[0].ClaimResources[0].CdiDevices[0].Name != "drv.example.com/dev=shared" {
		t.Errorf("DynamicResources = %v", dr)
	}

	// A restarted manager knows the claim from the checkpoint.
	m2 := New(Options{RootDir: dir, NodeName: "n", Client: client})
	m2.restore(m2.logger())
	if err := m2.RegisterPlugin(ctx, drv, sock, nil); err != nil {
		t.Fatal(err)
	}
	if cdi, err := m2.CDIDevices(b, &b.Spec.Containers[0]); err != nil || len(cdi) != 1 {
		t.Errorf("after restart CDIDevices = %v, %v", cdi, err)
	}

	// The first pod's going keeps the claim; the last's unprepares it.
	if err := m2.UnprepareResources(ctx, a.UID); err != nil || len(d.unprepared) != 0 {
		t.Fatalf("unprepare with a pod left = %v, %v", err, d.unprepared)
	}
	if err := m2.UnprepareResources(ctx, b.UID); err != nil || strings.Join(d.unprepared, ",") != "shared" {
		t.Fatalf("unprepare of the last pod = %v, %v", err, d.unprepared)
	}
	if _, err := m2.CDIDevices(b, &b.Spec.Containers[0]); err == nil {
		t.Error("an unprepared claim still gives devices")
	}

	// The driver goes: its ResourceSlices on the node are deleted after
	// the delay.
	m.DeRegisterPlugin(ctx, drv, sock)
	deadline := time.Now().Add(5 * time.Second)
	for {
		deleted := false
		for _, act := range client.Actions() {
			if dc, ok := act.(k8stesting.DeleteCollectionAction); ok && act.GetResource().Resource == "resourceslices" {
				sel := dc.GetListRestrictions().Fields.String()
				deleted = strings.Contains(sel, "spec.nodeName=n") && strings.Contains(sel, "spec.driver="+drv)
			}
		}
		if deleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ResourceSlices not deleted; actions %v", client.Actions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPrepareRefusesAndTimesOut(t *testing.T) {
	dir := t.TempDir()
	d, sock := serveDriver(t, dir)
	a := podUsing("a", "notmine")
	other := podUsing("other", "notmine")
	unallocated := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "ns"}}
	client := fake.NewSimpleClientset(allocatedClaim("notmine", other), unallocated)
	m := New(Options{RootDir: dir, NodeName: "n", Client: client})
	ctx := context.Background()
	if err := m.RegisterPlugin(ctx, drv, sock, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.PrepareResources(ctx, a); err == nil || !strings.Contains(err.Error(), "not reserved for the pod") {
		t.Errorf("a claim reserved for another pod = %v", err)
	}
	if err := m.PrepareResources(ctx, podUsing("b", "pending")); err == nil || !strings.Contains(err.Error(), "not allocated") {
		t.Errorf("an unallocated claim = %v", err)
	}
	if err := m.PrepareResources(ctx, podUsing("c", "absent")); err == nil || !strings.Contains(err.Error(), "fetch ResourceClaim absent") {
		t.Errorf("a missing claim = %v", err)
	}
	// A driver that hangs: the call ends at the timeout, with the error.
	old := callTimeout
	callTimeout = 50 * time.Millisecond
	defer func() { callTimeout = old }()
	d.hang = true
	if err := m.PrepareResources(ctx, other); err == nil || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Errorf("a hanging driver = %v", err)
	}
	if len(d.prepared) != 0 {
		t.Errorf("prepared %v", d.prepared)
	}
	if err := New(Options{RootDir: dir}).PrepareResources(ctx, a); err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("standalone = %v", err)
	}
}

// fakeHealth streams what it is told.
type fakeHealth struct {
	drahealthv1.UnimplementedDRAResourceHealthServer
	send chan *drahealthv1.NodeWatchResourcesResponse
}

func (f *fakeHealth) NodeWatchResources(_ *drahealthv1.NodeWatchResourcesRequest, s drahealthv1.DRAResourceHealth_NodeWatchResourcesServer) error {
	for {
		select {
		case r := <-f.send:
			if err := s.Send(r); err != nil {
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func TestDeviceHealthInTheStatus(t *testing.T) {
	dir := t.TempDir()
	fh := &fakeHealth{send: make(chan *drahealthv1.NodeWatchResourcesResponse, 2)}
	_, sock := serveDriver(t, dir, func(s *grpc.Server) { drahealthv1.RegisterDRAResourceHealthServer(s, fh) })

	a := podUsing("a", "c1")
	var mu sync.Mutex
	var resynced []types.UID
	m := New(Options{RootDir: dir, NodeName: "n", Client: fake.NewSimpleClientset(allocatedClaim("c1", a)), HealthMessages: true,
		PodsChanged: func(u []types.UID) { mu.Lock(); resynced = append(resynced, u...); mu.Unlock() }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	if err := m.RegisterPlugin(ctx, drv, sock, []string{drapb.DRAPluginService, drahealthv1.DRAResourceHealthService}); err != nil {
		t.Fatal(err)
	}
	if err := m.PrepareResources(ctx, a); err != nil {
		t.Fatal(err)
	}
	status := func() v1.ResourceHealth {
		st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "main"}}}
		m.SetResourcesStatus(a, st)
		rs := st.ContainerStatuses[0].AllocatedResourcesStatus
		if len(rs) != 1 || rs[0].Name != "claim:c" || len(rs[0].Resources) != 1 || rs[0].Resources[0].ResourceID != "drv.example.com/dev=c1" {
			t.Fatalf("allocatedResourcesStatus = %+v", rs)
		}
		return rs[0].Resources[0]
	}
	if h := status(); h.Health != v1.ResourceHealthStatusUnknown {
		t.Errorf("before any report: %+v", h)
	}
	fh.send <- &drahealthv1.NodeWatchResourcesResponse{Devices: []*drahealthv1.DeviceHealth{{
		Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "dev"}, Health: drahealthv1.HealthStatus_UNHEALTHY,
		LastUpdatedTime: time.Now().Unix(), Message: "ECC errors",
	}}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(resynced)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod was not resynced for its device's health")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if h := status(); h.Health != v1.ResourceHealthStatusUnhealthy || h.Message == nil || *h.Message != "ECC errors" {
		t.Errorf("after the report: %+v", h)
	}
	// A report older than its timeout is Unknown.
	fh.send <- &drahealthv1.NodeWatchResourcesResponse{Devices: []*drahealthv1.DeviceHealth{{
		Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "dev"}, Health: drahealthv1.HealthStatus_HEALTHY,
		LastUpdatedTime: time.Now().Add(-time.Minute).Unix(), HealthCheckTimeoutSeconds: 10,
	}}}
	deadline = time.Now().Add(5 * time.Second)
	for status().Health != v1.ResourceHealthStatusUnknown {
		if time.Now().After(deadline) {
			t.Fatalf("a stale report is still %+v", status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// At start, as upstream, the node's ResourceSlices of every driver are
// deleted: the drivers that run publish theirs again.
func TestStartWipesTheNodesSlices(t *testing.T) {
	client := fake.NewSimpleClientset()
	m := New(Options{RootDir: t.TempDir(), NodeName: "n", Client: client})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	defer func() { cancel(); <-done }()
	<-m.Ready()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, act := range client.Actions() {
			if dc, ok := act.(k8stesting.DeleteCollectionAction); ok && dc.GetListRestrictions().Fields.String() == "spec.nodeName=n" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no wipe of the node's slices: %v", client.Actions())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wipes counts the DeleteCollections of drv's ResourceSlices on node n.
func wipes(client *fake.Clientset) int {
	n := 0
	for _, act := range client.Actions() {
		if dc, ok := act.(k8stesting.DeleteCollectionAction); ok && act.GetResource().Resource == "resourceslices" &&
			dc.GetListRestrictions().Fields.String() == "spec.driver="+drv+",spec.nodeName=n" {
			n++
		}
	}
	return n
}

// serveAt serves a DRA driver on sock until the returned stop is called.
func serveAt(t *testing.T, sock string) (stop func()) {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	drapb.RegisterDRAPluginServer(s, &fakeDriver{})
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return s.Stop
}

func waitWipes(t *testing.T, client *fake.Clientset, want int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for wipes(client) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d wipes of the driver's slices after %s, want %d", what, wipes(client), within, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitUsable(t *testing.T, m *Manager, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.mu.Lock()
		up := m.usable(drv)
		m.mu.Unlock()
		if up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: its connection is not up after 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A driver is usable while it is registered and its connection is up, as
// upstream's: one that registers but never serves loses its slices after
// the wiping delay; one that serves keeps them, loses them once its
// service stops for longer than the delay, and keeps them when its
// service comes back within it.
func TestSlicesAreWipedWhileTheDriverIsUnusable(t *testing.T) {
	const delay = 300 * time.Millisecond
	ctx := context.Background()

	t.Run("registered, never serving", func(t *testing.T) {
		client := fake.NewSimpleClientset()
		m := New(Options{RootDir: t.TempDir(), NodeName: "n", Client: client, WipingDelay: delay})
		sock := filepath.Join(t.TempDir(), "drv.sock")
		if err := m.RegisterPlugin(ctx, drv, sock, []string{drapb.DRAPluginService}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.DeRegisterPlugin(ctx, drv, sock) })
		if !m.Registered(drv) {
			t.Fatal("not registered")
		}
		waitWipes(t, client, 1, 10*delay, "a registered driver that does not serve")
	})

	t.Run("serving, stopped, back within the delay, stopped for good", func(t *testing.T) {
		// Long enough that the first connection is up well within it.
		const delay = time.Second
		client := fake.NewSimpleClientset()
		m := New(Options{RootDir: t.TempDir(), NodeName: "n", Client: client, WipingDelay: delay})
		sock := filepath.Join(t.TempDir(), "drv.sock")
		stop := serveAt(t, sock)
		if err := m.RegisterPlugin(ctx, drv, sock, []string{drapb.DRAPluginService}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.DeRegisterPlugin(ctx, drv, sock) })
		waitUsable(t, m, "a serving driver")
		time.Sleep(2 * delay)
		if n := wipes(client); n != 0 {
			t.Fatalf("a serving driver's slices were wiped %d times", n)
		}

		// Stopped and back within the delay. The connection is up again
		// only once gRPC redials, after its first backoff (1 s give or
		// take 20 %), which may be longer than this test's delay: only a
		// wipe after the connection is up again would be wrong.
		stop()
		time.Sleep(delay / 3)
		stop = serveAt(t, sock)
		waitUsable(t, m, "a driver whose service restarted")
		before := wipes(client)
		time.Sleep(2 * delay)
		if n := wipes(client); n != before {
			t.Fatalf("slices wiped while the driver is usable again (%d -> %d)", before, n)
		}

		stop()
		waitWipes(t, client, before+1, 10*delay, "a driver whose service stopped for good")
	})
}

func TestPickHealthService(t *testing.T) {
	v1s, v1alpha1s := drahealthv1.DRAResourceHealthService, drahealthv1alpha1.DRAResourceHealthService
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{drapb.DRAPluginService}, ""},
		{[]string{drapb.DRAPluginService, v1alpha1s}, v1alpha1s},
		{[]string{drapb.DRAPluginService, v1alpha1s, v1s}, v1s},
		{[]string{v1s, v1alpha1s}, v1s},
		{[]string{"v2.DRAResourceHealth"}, ""},
	} {
		if got := pickHealthService(tc.versions); got != tc.want {
			t.Errorf("pickHealthService(%q) = %q, want %q", tc.versions, got, tc.want)
		}
	}
}

// fakeHealthV1alpha1 is a driver that serves only the v1alpha1 health API
// (upstream's node e2e driver "which only supports the v1alpha1 health
// API").
type fakeHealthV1alpha1 struct {
	drahealthv1alpha1.UnimplementedDRAResourceHealthServer
	send chan *drahealthv1alpha1.NodeWatchResourcesResponse
}

func (f *fakeHealthV1alpha1) NodeWatchResources(_ *drahealthv1alpha1.NodeWatchResourcesRequest, s drahealthv1alpha1.DRAResourceHealth_NodeWatchResourcesServer) error {
	for {
		select {
		case r := <-f.send:
			if err := s.Send(r); err != nil {
				return err
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func TestDeviceHealthFromAV1alpha1Driver(t *testing.T) {
	dir := t.TempDir()
	fh := &fakeHealthV1alpha1{send: make(chan *drahealthv1alpha1.NodeWatchResourcesResponse, 1)}
	_, sock := serveDriver(t, dir, func(s *grpc.Server) { drahealthv1alpha1.RegisterDRAResourceHealthServer(s, fh) })

	a := podUsing("a", "c1")
	m := New(Options{RootDir: dir, NodeName: "n", Client: fake.NewSimpleClientset(allocatedClaim("c1", a))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	if err := m.RegisterPlugin(ctx, drv, sock, []string{drapb.DRAPluginService, drahealthv1alpha1.DRAResourceHealthService}); err != nil {
		t.Fatal(err)
	}
	if err := m.PrepareResources(ctx, a); err != nil {
		t.Fatal(err)
	}
	fh.send <- &drahealthv1alpha1.NodeWatchResourcesResponse{Devices: []*drahealthv1alpha1.DeviceHealth{{
		Device: &drahealthv1alpha1.DeviceIdentifier{PoolName: "p", DeviceName: "dev"}, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY,
		LastUpdatedTime: time.Now().Unix(),
	}}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "main"}}}
		m.SetResourcesStatus(a, st)
		rs := st.ContainerStatuses[0].AllocatedResourcesStatus
		if len(rs) == 1 && len(rs[0].Resources) == 1 && rs[0].Resources[0].Health == v1.ResourceHealthStatusUnhealthy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the v1alpha1 driver's report never reached the status: %+v", rs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
