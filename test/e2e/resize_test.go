package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gokubelet/kubelet/pkg/runtime/cgroups"
	"github.com/gokubelet/kubelet/test/framework"
)

// In-place resize through the API server's resize subresource: the
// container keeps running (same ID, no restart), its cgroup and its pod's
// get the new limits, the status reports the allocated and actual
// resources; a resize beyond the node is Infeasible; with resizePolicy
// RestartContainer the container restarts with the new limit.
func TestInPlaceResize(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	p := testPod("resize")
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, ns, "resize", "Running", running)
	before := p.Status.ContainerStatuses[0]

	resize := func(name string, mutate func(*v1.Container)) {
		t.Helper()
		cur, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutate(&cur.Spec.Containers[0])
		if _, err := client.CoreV1().Pods(ns).UpdateResize(ctx, name, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("resize: %v", err)
		}
	}
	resize("resize", func(c *v1.Container) {
		c.Resources.Limits[v1.ResourceMemory] = resource.MustParse("256Mi")
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("400m")
	})
	p = waitPod(t, ns, "resize", "resized in place", func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Resources == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].Resources
		return r.Limits.Memory().String() == "256Mi" && r.Limits.Cpu().String() == "400m" &&
			podConditionPresent(p, v1.PodResizeInProgress) == false && podConditionPresent(p, v1.PodResizePending) == false
	})
	cs := p.Status.ContainerStatuses[0]
	if cs.ContainerID != before.ContainerID || cs.RestartCount != 0 {
		t.Errorf("the container restarted for a NotRequired resize: %s -> %s, restarts %d", before.ContainerID, cs.ContainerID, cs.RestartCount)
	}
	if got := cs.AllocatedResources.Memory().String(); got != "64Mi" {
		t.Errorf("allocatedResources memory %s, want the request 64Mi", got)
	}
	// The kernel agrees: the container's and the pod's cgroups.
	l, err := cgroups.Detect()
	if err != nil {
		t.Fatal(err)
	}
	if l.Version == cgroups.V1 {
		podDir := filepath.Join(l.Mounts["memory"], "kubepods", "burstable", "pod"+string(p.UID))
		id := strings.TrimPrefix(cs.ContainerID, "containerd://")
		for _, f := range []string{filepath.Join(podDir, id, "memory.limit_in_bytes"), filepath.Join(podDir, "memory.limit_in_bytes")} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != strconv.Itoa(256<<20) {
				t.Errorf("%s = %s, want 256Mi", f, got)
			}
		}
		quota, err := os.ReadFile(filepath.Join(l.Mounts["cpu"], "kubepods", "burstable", "pod"+string(p.UID), id, "cpu.cfs_quota_us"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(quota)); got != "40000" {
			t.Errorf("container cpu quota %s, want 40000", got)
		}
	}

	// Beyond the node: the 1.37 API server's PodResizeValidator
	// admission (on by default) refuses a resize beyond the node's
	// allocatable before the kubelet sees it; nothing is applied.
	cur, err := client.CoreV1().Pods(ns).Get(ctx, "resize", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("100Ti")
	cur.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("100Ti")
	_, err = client.CoreV1().Pods(ns).UpdateResize(ctx, "resize", cur, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "node didn't have enough allocatable resources: memory") {
		t.Errorf("a resize beyond the node's allocatable memory: %v, want the API server's refusal", err)
	}
	p, err = client.CoreV1().Pods(ns).Get(ctx, "resize", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Status.ContainerStatuses[0].Resources.Limits.Memory().String(); got != "256Mi" {
		t.Errorf("an infeasible resize was applied: %s", got)
	}

	// RestartContainer: the container restarts with the new limit.
	rp := testPod("restart")
	rp.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	rp.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, rp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rp = waitPod(t, ns, "restart", "Running", running)
	resize("restart", func(c *v1.Container) { c.Resources.Limits[v1.ResourceMemory] = resource.MustParse("192Mi") })
	waitPod(t, ns, "restart", "restarted with the new limit", func(p *v1.Pod) bool {
		if !running(p) {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount == 1 && cs.ContainerID != rp.Status.ContainerStatuses[0].ContainerID &&
			cs.Resources != nil && cs.Resources.Limits.Memory().String() == "192Mi"
	})
	framework.Eventually(t, "a ResizeCompleted event", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range l.Items {
			seen = append(seen, e.Reason)
			if e.Reason == "ResizeCompleted" && strings.HasPrefix(e.Message, "Pod resize completed: ") {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

func podConditionPresent(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
