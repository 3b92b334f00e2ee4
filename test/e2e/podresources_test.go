package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gokubelet/kubelet/test/framework"
)

// TestPodResourcesAPI: the pod-resources socket lists a running pod with
// its containers (a sidecar included), and Get finds it, as a monitoring
// agent reads them.
func TestPodResourcesAPI(t *testing.T) {
	node(t)
	ns := namespace(t)
	p := testPod("pr")
	always := v1.ContainerRestartPolicyAlways
	side := p.Spec.Containers[0]
	side.Name, side.RestartPolicy = "side", &always
	// Not the main container's HTTP port: both share the pod's network
	// namespace, and main crash-looped on "address in use" (the test
	// passed only when a poll caught main in its few running milliseconds).
	side.Command = []string{"/testserver", "--http-port=0"}
	p.Spec.InitContainers = []v1.Container{side}
	createPod(t, ns, p)
	waitPod(t, ns, "pr", "Running", running)

	conn, err := grpc.NewClient("unix://"+filepath.Join(rootDir, "pod-resources", "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := podresourcesv1.NewPodResourcesListerClient(conn)
	containers := func(r *podresourcesv1.PodResources) string {
		s := ""
		for _, ct := range r.Containers {
			s += ct.Name + " "
		}
		return s
	}
	framework.Eventually(t, "the pod in List", func() (bool, string) {
		list, err := c.List(context.Background(), &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			return false, err.Error()
		}
		for _, r := range list.PodResources {
			if r.Namespace == ns && r.Name == "pr" {
				return containers(r) == "side main ", containers(r)
			}
		}
		return false, fmt.Sprintf("%d pods listed, not %s/pr", len(list.PodResources), ns)
	})
	got, err := c.Get(context.Background(), &podresourcesv1.GetPodResourcesRequest{PodNamespace: ns, PodName: "pr"})
	if err != nil || containers(got.PodResources) != "side main " {
		t.Errorf("Get = %v, %v", got, err)
	}
	if _, err := c.GetAllocatableResources(context.Background(), &podresourcesv1.AllocatableResourcesRequest{}); err != nil {
		t.Errorf("GetAllocatableResources: %v", err)
	}
}
