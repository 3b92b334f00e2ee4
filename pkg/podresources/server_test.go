package podresources

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/gokubelet/kubelet/internal/testing/eventually"
	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
)

type fakePods []*v1.Pod

func (f fakePods) Pods() []*v1.Pod { return f }
func (f fakePods) GetPodByName(ns, name string) (*v1.Pod, bool) {
	for _, p := range f {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func testPods() fakePods {
	always := v1.ContainerRestartPolicyAlways
	return fakePods{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-web"},
			Spec: v1.PodSpec{
				InitContainers: []v1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}},
				Containers:     []v1.Container{{Name: "app"}, {Name: "log"}},
			},
			Status: v1.PodStatus{Phase: v1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "done", UID: "u-done"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "job"}}}, Status: v1.PodStatus{Phase: v1.PodSucceeded}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gpu", UID: "u-gpu"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "train"}}}, Status: v1.PodStatus{Phase: v1.PodPending}},
	}
}

func names(r *podresourcesv1.PodResources) string {
	var out []string
	for _, c := range r.Containers {
		n := c.Name
		for _, d := range c.Devices {
			n += "[" + d.ResourceName + "=" + strings.Join(d.DeviceIds, ",") + "]"
		}
		out = append(out, n)
	}
	return r.Namespace + "/" + r.Name + ":" + strings.Join(out, " ")
}

func TestListAndResources(t *testing.T) {
	a := Assignments{Devices: func(uid, c string) []*podresourcesv1.ContainerDevices {
		if uid == "u-gpu" && c == "train" {
			return []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/gpu", DeviceIds: []string{"g0", "g1"}}}
		}
		return nil
	}}
	list := List(testPods(), a)
	var got []string
	for _, r := range list {
		got = append(got, names(r))
	}
	// Terminal pods are left out; sidecars come first, ended-once init
	// containers not at all.
	want := []string{"ns/web:proxy app log", "ns/gpu:train[example.com/gpu=g0,g1]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("List = %q, want %q", got, want)
	}
	if r := Resources(testPods()[0], Assignments{}); names(r) != "ns/web:proxy app log" || r.Containers[1].Devices != nil {
		t.Errorf("without managers: %s %+v", names(r), r.Containers)
	}
}

func TestServerOverTheSocket(t *testing.T) {
	s := New(t.TempDir(), testPods(), Assignments{
		AllocatableDevices: func() []*podresourcesv1.ContainerDevices {
			return []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/gpu", DeviceIds: []string{"g0", "g1", "g2"}}}
		},
	})
	if filepath.Base(filepath.Dir(s.Socket)) != DirName || filepath.Base(s.Socket) != SocketName {
		t.Errorf("socket %s", s.Socket)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient("unix://"+s.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := podresourcesv1.NewPodResourcesListerClient(conn)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	reg := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	before := metricstest.ScrapeRegistry(t, reg)

	list, err := c.List(cctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil || len(list.PodResources) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	got, err := c.Get(cctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "ns", PodName: "web"})
	if err != nil || names(got.PodResources) != "ns/web:proxy app log" {
		t.Errorf("Get = %v, %v", got, err)
	}
	if _, err := c.Get(cctx, &podresourcesv1.GetPodResourcesRequest{PodNamespace: "ns", PodName: "nope"}); err == nil || !strings.Contains(err.Error(), "pod nope in namespace ns not found") {
		t.Errorf("Get of a missing pod: %v", err)
	}
	alloc, err := c.GetAllocatableResources(cctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || len(alloc.Devices) != 1 || len(alloc.Devices[0].DeviceIds) != 3 || alloc.CpuIds != nil {
		t.Errorf("GetAllocatableResources = %v, %v", alloc, err)
	}
	old, err := podresourcesv1alpha1.NewPodResourcesListerClient(conn).List(cctx, &podresourcesv1alpha1.ListPodResourcesRequest{})
	if err != nil || len(old.PodResources) != 2 || old.PodResources[0].Containers[0].Name != "proxy" {
		t.Errorf("v1alpha1 List = %v, %v", old, err)
	}
	// Each call counted as upstream counts it.
	after := metricstest.ScrapeRegistry(t, reg)
	for _, tc := range []struct {
		name, version string
		delta         float64
	}{
		{"kubelet_pod_resources_endpoint_requests_total", "v1", 4},
		{"kubelet_pod_resources_endpoint_requests_total", "v1alpha1", 1},
		{"kubelet_pod_resources_endpoint_requests_list", "v1", 1},
		{"kubelet_pod_resources_endpoint_requests_get", "v1", 2},
		{"kubelet_pod_resources_endpoint_errors_get", "v1", 1},
		{"kubelet_pod_resources_endpoint_requests_get_allocatable", "v1", 1},
		{"kubelet_pod_resources_endpoint_errors_list", "v1", 0},
	} {
		l := map[string]string{"server_api_version": tc.version}
		if d := after.Sum(tc.name, l) - before.Sum(tc.name, l); d != tc.delta {
			t.Errorf("%s{%s} grew by %v, want %v", tc.name, tc.version, d, tc.delta)
		}
	}

	// A burst over the limit is refused as upstream refuses it, and the
	// API answers again once the bucket refills.
	limited := 0
	for range 3 * DefaultBurst {
		_, err := c.List(cctx, &podresourcesv1.ListPodResourcesRequest{})
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "rejected by rate limit") {
			limited++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if limited == 0 {
		t.Errorf("%d calls at once were never limited", 3*DefaultBurst)
	}
	eventually.Seen(t, "the API answering again", func() (bool, string) {
		_, err := c.List(cctx, &podresourcesv1.ListPodResourcesRequest{})
		return err == nil, status.Convert(err).Message()
	})
}
