// Package podresources serves the kubelet's pod-resources API
// (k8s.io/kubelet podresources v1, and v1alpha1's List) on
// <root-dir>/pod-resources/kubelet.sock: what monitoring agents and
// topology-aware schedulers read to learn which devices, CPUs, memory and
// dynamic resources each container holds.
//
// The answers are built by pure functions over the node's active pods and
// an Assignments source; this node has no device, CPU or memory manager
// yet, so without one every container is listed with no resources, which
// is what it holds. Requests are rate limited as upstream's (100 per
// second, bursts of 10): over the limit a call fails with
// ResourceExhausted, "rejected by rate limit". The calls that pass are
// counted in upstream's kubelet_pod_resources_endpoint_* metrics.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
	podresourcesv1alpha1 "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podstatus"
)

// Upstream's rate limit of the API (podresources.DefaultQPS and
// DefaultBurstTokens).
const (
	DefaultQPS   = 100
	DefaultBurst = 10
)

// DirName is the socket's directory under --root-dir, and SocketName its
// name.
const (
	DirName    = "pod-resources"
	SocketName = "kubelet.sock"
)

// Pods are the node's pods.
type Pods interface {
	// Pods lists the node's pods with their current status.
	Pods() []*v1.Pod
	// GetPodByName finds one.
	GetPodByName(namespace, name string) (*v1.Pod, bool)
}

// Assignments are what the node's resource managers assigned. Nil fields
// mean no such manager: nothing assigned.
type Assignments struct {
	// Devices of a container (the device manager).
	Devices func(podUID, container string) []*podresourcesv1.ContainerDevices
	// AllocatableDevices are the node's healthy devices.
	AllocatableDevices func() []*podresourcesv1.ContainerDevices
	// DynamicResources of a container (DRA).
	DynamicResources func(pod *v1.Pod, container string) []*podresourcesv1.DynamicResource
}

// Server is the pod-resources API. Run it with Start.
type Server struct {
	Socket      string
	Pods        Pods
	Assignments Assignments

	podresourcesv1.UnimplementedPodResourcesListerServer
}

// New returns the server of rootDir's socket.
func New(rootDir string, pods Pods, a Assignments) *Server {
	return &Server{Socket: filepath.Join(rootDir, DirName, SocketName), Pods: pods, Assignments: a}
}

// Start serves until ctx ends, then returns nil.
func (s *Server) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("socket", s.Socket)
	if err := os.MkdirAll(filepath.Dir(s.Socket), 0o750); err != nil {
		return fmt.Errorf("pod-resources socket: %w", err)
	}
	if err := os.Remove(s.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pod-resources socket: %w", err)
	}
	l, err := net.Listen("unix", s.Socket)
	if err != nil {
		return fmt.Errorf("pod-resources socket: %w", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(limit(rate.NewLimiter(DefaultQPS, DefaultBurst))))
	podresourcesv1.RegisterPodResourcesListerServer(srv, s)
	podresourcesv1alpha1.RegisterPodResourcesListerServer(srv, v1alpha1Server{s: s})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	log.Info("Serving the pod-resources API")
	select {
	case <-ctx.Done():
		srv.Stop()
		<-done
		return nil
	case err := <-done:
		return fmt.Errorf("pod-resources socket: %w", err)
	}
}

// errRateLimited is upstream's answer over the limit.
var errRateLimited = status.Error(codes.ResourceExhausted, "rejected by rate limit")

func limit(l *rate.Limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !l.Allow() {
			return nil, errRateLimited
		}
		return h(ctx, req)
	}
}

// List reports the resources of every active pod's containers.
func (s *Server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	metrics.PodResourcesRequestsTotal.WithLabelValues("v1").Inc()
	metrics.PodResourcesRequestsList.WithLabelValues("v1").Inc()
	return &podresourcesv1.ListPodResourcesResponse{PodResources: List(s.Pods.Pods(), s.Assignments)}, nil
}

// Get reports one pod's.
func (s *Server) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	metrics.PodResourcesRequestsTotal.WithLabelValues("v1").Inc()
	metrics.PodResourcesRequestsGet.WithLabelValues("v1").Inc()
	pod, ok := s.Pods.GetPodByName(req.GetPodNamespace(), req.GetPodName())
	if !ok {
		metrics.PodResourcesErrorsGet.WithLabelValues("v1").Inc()
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.GetPodName(), req.GetPodNamespace())
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: Resources(pod, s.Assignments)}, nil
}

// GetAllocatableResources reports the node's resources that can be
// assigned.
func (s *Server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	metrics.PodResourcesRequestsTotal.WithLabelValues("v1").Inc()
	metrics.PodResourcesRequestsGetAllocatable.WithLabelValues("v1").Inc()
	out := &podresourcesv1.AllocatableResourcesResponse{}
	if s.Assignments.AllocatableDevices != nil {
		out.Devices = s.Assignments.AllocatableDevices()
	}
	return out, nil
}

// List is the pod resources of pods that are active (not Succeeded or
// Failed), in their order.
func List(pods []*v1.Pod, a Assignments) []*podresourcesv1.PodResources {
	out := make([]*podresourcesv1.PodResources, 0, len(pods))
	for _, p := range pods {
		if podstatus.IsTerminal(p.Status.Phase) {
			continue
		}
		out = append(out, Resources(p, a))
	}
	return out
}

// Resources is one pod's: its sidecars (restartable init containers) and
// its containers, as upstream lists them (other init containers hold
// nothing once they ended).
func Resources(pod *v1.Pod, a Assignments) *podresourcesv1.PodResources {
	r := &podresourcesv1.PodResources{Name: pod.Name, Namespace: pod.Namespace,
		Containers: make([]*podresourcesv1.ContainerResources, 0, len(pod.Spec.Containers))}
	add := func(c *v1.Container) {
		cr := &podresourcesv1.ContainerResources{Name: c.Name}
		if a.Devices != nil {
			cr.Devices = a.Devices(string(pod.UID), c.Name)
		}
		if a.DynamicResources != nil {
			cr.DynamicResources = a.DynamicResources(pod, c.Name)
		}
		r.Containers = append(r.Containers, cr)
	}
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return r
}

// v1alpha1Server answers the older API's List from the same facts.
type v1alpha1Server struct {
	podresourcesv1alpha1.UnimplementedPodResourcesListerServer
	s *Server
}

func (v v1alpha1Server) List(ctx context.Context, _ *podresourcesv1alpha1.ListPodResourcesRequest) (*podresourcesv1alpha1.ListPodResourcesResponse, error) {
	// Upstream counts only the total for the older API.
	metrics.PodResourcesRequestsTotal.WithLabelValues("v1alpha1").Inc()
	list := List(v.s.Pods.Pods(), v.s.Assignments)
	out := &podresourcesv1alpha1.ListPodResourcesResponse{PodResources: make([]*podresourcesv1alpha1.PodResources, 0, len(list))}
	for _, p := range list {
		ap := &podresourcesv1alpha1.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			ac := &podresourcesv1alpha1.ContainerResources{Name: c.Name}
			for _, d := range c.Devices {
				ac.Devices = append(ac.Devices, &podresourcesv1alpha1.ContainerDevices{ResourceName: d.ResourceName, DeviceIds: d.DeviceIds})
			}
			ap.Containers = append(ap.Containers, ac)
		}
		out.PodResources = append(out.PodResources, ap)
	}
	return out, nil
}
