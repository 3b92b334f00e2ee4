// Package instrumented decorates the CRI runtime and image service clients:
// every call is counted and timed in kubelet_runtime_operations_total,
// kubelet_runtime_operations_duration_seconds and
// kubelet_runtime_operations_errors_total by operation_type (upstream's
// operation names), in one place instead of at every call site. The calls
// that make up a pod's start (RunPodSandbox, PullImage, CreateContainer,
// StartContainer) are also reported to an Observer, which is how the pod
// startup timeline learns where a pod's start time went.
package instrumented

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// Observer hears about the CRI calls of a pod's start. Calls come from pod
// workers, concurrently; implementations must be quick and safe for
// concurrent use. uid is the pod's UID as the CRI request names it.
type Observer interface {
	SandboxStarted(uid types.UID, start, end time.Time, err error)
	ImagePulled(uid types.UID, image string, start, end time.Time, err error)
	ContainerCreated(uid types.UID, container string, start, end time.Time, err error)
	ContainerStarted(uid types.UID, container string, start, end time.Time, err error)
}

// record counts and times one call.
func record(op string, start time.Time, err error) {
	metrics.RuntimeOperations.WithLabelValues(op).Inc()
	metrics.RuntimeOperationsDuration.WithLabelValues(op).Observe(metrics.SinceInSeconds(start))
	if err != nil {
		metrics.RuntimeOperationsErrors.WithLabelValues(op).Inc()
	}
}

// maxPending bounds the created-but-not-started containers remembered for
// the observer (a container is normally started right after creation).
const maxPending = 4096

type pendingContainer struct {
	uid  types.UID
	name string
}

// RuntimeService returns rs instrumented; obs may be nil.
func RuntimeService(rs cri.RuntimeService, obs Observer) cri.RuntimeService {
	return &runtimeService{rs: rs, obs: obs, pending: map[string]pendingContainer{}}
}

type runtimeService struct {
	rs  cri.RuntimeService
	obs Observer

	mu      sync.Mutex
	pending map[string]pendingContainer
}

var _ cri.RuntimeService = (*runtimeService)(nil)

func (r *runtimeService) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	start := time.Now()
	out, err := r.rs.Version(ctx, apiVersion)
	record("version", start, err)
	return out, err
}

func (r *runtimeService) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	start := time.Now()
	out, err := r.rs.Status(ctx, verbose)
	record("status", start, err)
	return out, err
}

func (r *runtimeService) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	start := time.Now()
	out, err := r.rs.RuntimeConfig(ctx)
	record("runtime_config", start, err)
	return out, err
}

func (r *runtimeService) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	start := time.Now()
	err := r.rs.UpdateRuntimeConfig(ctx, cfg)
	record("update_runtime_config", start, err)
	return err
}

func (r *runtimeService) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := time.Now()
	id, err := r.rs.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	end := time.Now()
	record("create_container", start, err)
	uid := types.UID(sandboxConfig.GetMetadata().GetUid())
	name := config.GetMetadata().GetName()
	if r.obs != nil && uid != "" {
		if err == nil {
			r.mu.Lock()
			if len(r.pending) >= maxPending {
				r.pending = map[string]pendingContainer{}
			}
			r.pending[id] = pendingContainer{uid: uid, name: name}
			r.mu.Unlock()
		}
		r.obs.ContainerCreated(uid, name, start, end, err)
	}
	return id, err
}

func (r *runtimeService) StartContainer(ctx context.Context, id string) error {
	start := time.Now()
	err := r.rs.StartContainer(ctx, id)
	end := time.Now()
	record("start_container", start, err)
	if r.obs != nil {
		r.mu.Lock()
		p, ok := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ok {
			r.obs.ContainerStarted(p.uid, p.name, start, end, err)
		}
	}
	return err
}

func (r *runtimeService) StopContainer(ctx context.Context, id string, timeout int64) error {
	start := time.Now()
	err := r.rs.StopContainer(ctx, id, timeout)
	record("stop_container", start, err)
	return err
}

func (r *runtimeService) RemoveContainer(ctx context.Context, id string) error {
	start := time.Now()
	err := r.rs.RemoveContainer(ctx, id)
	record("remove_container", start, err)
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
	return err
}

func (r *runtimeService) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	start := time.Now()
	out, err := r.rs.ListContainers(ctx, filter)
	record("list_containers", start, err)
	return out, err
}

func (r *runtimeService) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	start := time.Now()
	out, err := r.rs.ContainerStatus(ctx, id, verbose)
	record("container_status", start, err)
	return out, err
}

func (r *runtimeService) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	start := time.Now()
	err := r.rs.UpdateContainerResources(ctx, id, res)
	record("update_container", start, err)
	return err
}

func (r *runtimeService) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	start := time.Now()
	stdout, stderr, err := r.rs.ExecSync(ctx, id, cmd, timeout)
	record("exec_sync", start, err)
	return stdout, stderr, err
}

func (r *runtimeService) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	start := time.Now()
	out, err := r.rs.Exec(ctx, req)
	record("exec", start, err)
	return out, err
}

func (r *runtimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	start := time.Now()
	out, err := r.rs.Attach(ctx, req)
	record("attach", start, err)
	return out, err
}

func (r *runtimeService) ReopenContainerLog(ctx context.Context, id string) error {
	start := time.Now()
	err := r.rs.ReopenContainerLog(ctx, id)
	record("reopen_container_log", start, err)
	return err
}

func (r *runtimeService) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	start := time.Now()
	err := r.rs.CheckpointContainer(ctx, options)
	record("checkpoint_container", start, err)
	return err
}

func (r *runtimeService) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	start := time.Now()
	err := r.rs.GetContainerEvents(ctx, ch, established)
	record("get_container_events", start, err)
	return err
}

func (r *runtimeService) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	start := time.Now()
	id, err := r.rs.RunPodSandbox(ctx, config, handler)
	end := time.Now()
	record("run_podsandbox", start, err)
	metrics.RunPodSandboxDuration.WithLabelValues(handler).Observe(end.Sub(start).Seconds())
	if err != nil {
		metrics.RunPodSandboxErrors.WithLabelValues(handler).Inc()
	}
	if r.obs != nil {
		if uid := types.UID(config.GetMetadata().GetUid()); uid != "" {
			r.obs.SandboxStarted(uid, start, end, err)
		}
	}
	return id, err
}

func (r *runtimeService) StopPodSandbox(ctx context.Context, id string) error {
	start := time.Now()
	err := r.rs.StopPodSandbox(ctx, id)
	record("stop_podsandbox", start, err)
	return err
}

func (r *runtimeService) RemovePodSandbox(ctx context.Context, id string) error {
	start := time.Now()
	err := r.rs.RemovePodSandbox(ctx, id)
	record("remove_podsandbox", start, err)
	return err
}

func (r *runtimeService) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	start := time.Now()
	out, err := r.rs.PodSandboxStatus(ctx, id, verbose)
	record("podsandbox_status", start, err)
	return out, err
}

func (r *runtimeService) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	start := time.Now()
	out, err := r.rs.ListPodSandbox(ctx, filter)
	record("list_podsandbox", start, err)
	return out, err
}

func (r *runtimeService) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	start := time.Now()
	out, err := r.rs.PortForward(ctx, req)
	record("port_forward", start, err)
	return out, err
}

func (r *runtimeService) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	start := time.Now()
	out, err := r.rs.UpdatePodSandboxResources(ctx, req)
	record("update_podsandbox_resources", start, err)
	return out, err
}

func (r *runtimeService) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	start := time.Now()
	out, err := r.rs.ContainerStats(ctx, id)
	record("container_stats", start, err)
	return out, err
}

func (r *runtimeService) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	start := time.Now()
	out, err := r.rs.ListContainerStats(ctx, filter)
	record("list_container_stats", start, err)
	return out, err
}

func (r *runtimeService) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	start := time.Now()
	out, err := r.rs.PodSandboxStats(ctx, id)
	record("podsandbox_stats", start, err)
	return out, err
}

func (r *runtimeService) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	start := time.Now()
	out, err := r.rs.ListPodSandboxStats(ctx, filter)
	record("list_podsandbox_stats", start, err)
	return out, err
}

func (r *runtimeService) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	start := time.Now()
	out, err := r.rs.ListMetricDescriptors(ctx)
	record("list_metric_descriptors", start, err)
	return out, err
}

func (r *runtimeService) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	start := time.Now()
	out, err := r.rs.ListPodSandboxMetrics(ctx)
	record("list_podsandbox_metrics", start, err)
	return out, err
}

// ImageService returns is instrumented; obs may be nil. A successful pull
// is also observed in kubelet_image_pull_duration_seconds by image size,
// which one ImageStatus call made in the background learns (never on the
// pod's start path).
func ImageService(is cri.ImageManagerService, obs Observer) cri.ImageManagerService {
	return &imageService{is: is, obs: obs}
}

type imageService struct {
	is  cri.ImageManagerService
	obs Observer
}

var _ cri.ImageManagerService = (*imageService)(nil)

func (s *imageService) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	start := time.Now()
	out, err := s.is.ListImages(ctx, filter)
	record("list_images", start, err)
	return out, err
}

func (s *imageService) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	start := time.Now()
	out, err := s.is.ImageStatus(ctx, image, verbose)
	record("image_status", start, err)
	return out, err
}

func (s *imageService) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	start := time.Now()
	ref, err := s.is.PullImage(ctx, image, auth, sandboxConfig)
	end := time.Now()
	record("pull_image", start, err)
	if s.obs != nil {
		if uid := types.UID(sandboxConfig.GetMetadata().GetUid()); uid != "" {
			s.obs.ImagePulled(uid, image.GetImage(), start, end, err)
		}
	}
	if err == nil {
		go s.observePull(ref, end.Sub(start))
	}
	return ref, err
}

// observePull records a successful pull's duration under its size bucket.
func (s *imageService) observePull(ref string, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var size uint64
	if st, err := s.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false); err == nil {
		size = st.GetImage().GetSize()
	}
	metrics.ImagePullDuration.WithLabelValues(metrics.ImageSizeBucket(size)).Observe(took.Seconds())
}

func (s *imageService) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	start := time.Now()
	err := s.is.RemoveImage(ctx, image)
	record("remove_image", start, err)
	return err
}

func (s *imageService) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	start := time.Now()
	out, err := s.is.ImageFsInfo(ctx)
	record("image_fs_info", start, err)
	return out, err
}

func (r *runtimeService) CheckpointPod(ctx context.Context, options *runtimeapi.CheckpointPodRequest) error {
	start := time.Now()
	err := r.rs.CheckpointPod(ctx, options)
	record("checkpoint_pod", start, err)
	return err
}

func (r *runtimeService) RestorePod(ctx context.Context, options *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	start := time.Now()
	out, err := r.rs.RestorePod(ctx, options)
	record("restore_pod", start, err)
	return out, err
}

// Close closes the underlying connection; it is no CRI call, so it is not
// recorded.
func (r *runtimeService) Close(ctx context.Context) error { return r.rs.Close(ctx) }

// Close closes the underlying connection; it is no CRI call, so it is not
// recorded.
func (s *imageService) Close(ctx context.Context) error { return s.is.Close(ctx) }
