package kubelet

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	compbase "k8s.io/component-base/metrics"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/pkg/pod/podmanager"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
	"github.com/gokubelet/kubelet/pkg/pod/podworkers"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
	"github.com/gokubelet/kubelet/pkg/runtime/images"
	"github.com/gokubelet/kubelet/pkg/runtime/kuberuntime"
)

func scrapeKubelet(t *testing.T, r compbase.KubeRegistry) metricstest.Families {
	t.Helper()
	f, err := metricstest.ScrapeHandler(compbase.HandlerFor(r, compbase.HandlerOpts{}), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSyncResultCounts: the started pods and containers counters follow
// the steps of a SyncPod round, as upstream counts them.
func TestSyncResultCounts(t *testing.T) {
	r := metrics.NewKubeletRegistry(metrics.KubeletOptions{})
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}, {Name: "side"}}}}
	res := container.SyncResult{Steps: []container.StepResult{
		{Action: container.ActionCreateSandbox},
		{Action: container.ActionCreateSandbox, Err: errors.New("cni")},
		{Action: container.ActionStartInit, Container: "init"},
		{Action: container.ActionStart, Container: "app"},
		{Action: container.ActionPull, Container: "side", Err: errors.New("no"), Reason: images.ReasonErrImagePull},
		// Held back by crash-loop back-off: nothing was tried.
		{Action: container.ActionStart, Container: "app", Err: errors.New("back-off"), Reason: kuberuntime.ReasonCrashLoopBackOff},
		{Action: container.ActionKill, Container: "app"},
	}}
	before := scrapeKubelet(t, r)
	(&observability{}).syncResult(pod, res)
	var nilObs *observability
	nilObs.syncResult(pod, res) // a kubelet without monitoring counts nothing
	after := scrapeKubelet(t, r)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		delta  float64
	}{
		{"kubelet_started_pods_total", nil, 2},
		{"kubelet_started_pods_errors_total", nil, 1},
		{"kubelet_started_containers_total", map[string]string{"container_type": "container"}, 2},
		{"kubelet_started_containers_total", map[string]string{"container_type": "init_container"}, 1},
		{"kubelet_started_containers_errors_total", map[string]string{"container_type": "container", "code": "ErrImagePull"}, 1},
		{"kubelet_started_containers_errors_total", map[string]string{"code": kuberuntime.ReasonCrashLoopBackOff}, 0},
	} {
		if d := after.Sum(tc.name, tc.labels) - before.Sum(tc.name, tc.labels); d != tc.delta {
			t.Errorf("%s%v grew by %v, want %v", tc.name, tc.labels, d, tc.delta)
		}
	}
}

// TestPodCounts: desired, active and mirror pods of a standalone kubelet.
func TestPodCounts(t *testing.T) {
	mk := func(uid, source string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: source}}}
	}
	static, api, done := mk("s", podspec.SourceFile), mk("a", podspec.SourceAPI), mk("d", podspec.SourceAPI)
	mirror := mk("m", podspec.SourceAPI)
	mirror.Annotations[podspec.ConfigMirrorAnnotation] = "x"
	k := &Kubelet{pods: podmanager.New(), status: fakeStatus{}, workers: podworkers.New(nil, podworkers.Options{})}
	k.pods.AddOrUpdate(static, api, done, mirror)
	k.status.SetPodStatus(done, v1.PodStatus{Phase: v1.PodSucceeded})
	n := k.podCounts()
	if n.Desired != [2]int{2, 1} || n.Active != [2]int{1, 1} || n.Mirror != 1 {
		t.Errorf("counts = %+v", n)
	}
	f := scrapeKubelet(t, metrics.NewKubeletRegistry(metrics.KubeletOptions{Pods: k.podCounts}))
	if f.Sum("kubelet_desired_pods", map[string]string{"static": "true"}) != 1 || f.Sum("kubelet_active_pods", map[string]string{"static": ""}) != 1 || f.Sum("kubelet_mirror_pods", nil) != 1 {
		t.Errorf("scraped: %v %v %v", f.Find("kubelet_desired_pods", nil), f.Find("kubelet_active_pods", nil), f.Find("kubelet_mirror_pods", nil))
	}
}
