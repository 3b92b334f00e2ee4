package e2e

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gokubelet/kubelet/pkg/plugins/devices"
	"github.com/gokubelet/kubelet/test/framework"
)

// sampleResource is what upstream's sample device plugin serves: two
// devices, Dev-1 and Dev-2. Its Allocate creates /tmp/<id> on the host and
// mounts it at the same path; with CDI_ENABLED it also writes a CDI spec
// (/var/run/cdi/example.com.json: env CDI_DEVICE=CDI-<id> and a device
// node /tmp/CDI-<id>) and returns the CDI device example.com/resource=CDI-<id>.
const sampleResource = "example.com/resource"

// startSampleDevicePlugin runs upstream's sample device plugin; it
// registers on /var/lib/kubelet/device-plugins/kubelet.sock, and again
// whenever that socket is created anew (a kubelet restart).
func startSampleDevicePlugin(t *testing.T) *osexec.Cmd {
	t.Helper()
	bin := os.Getenv("GOKUBELET_SAMPLE_DEVICE_PLUGIN")
	if bin == "" {
		t.Fatal("GOKUBELET_SAMPLE_DEVICE_PLUGIN is not set: run through make test (hack/test.sh builds upstream's sample device plugin)")
	}
	// The directory of CDI specs containerd reads (its default), where
	// the plugin writes its spec; a device plugin's DaemonSet mounts it.
	if err := os.MkdirAll("/var/run/cdi", 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(bin)
	cmd.Env = append(os.Environ(), "CDI_ENABLED=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(cmd) })
	return cmd
}

// takeBackDevicePluginSocket: make test's unit and integration tiers run
// beside this tier, and each of their kubelets creates the host's fixed
// /var/lib/kubelet/device-plugins/kubelet.sock anew when it starts, as
// every kubelet does. So this tier's kubelet, started before them, may no
// longer serve that socket, and the last of them, gone, leaves a file
// nobody listens on. Wait until they are done (hack/test.sh touches the
// file however they end), then restart this tier's kubelet, which creates
// the socket anew.
func takeBackDevicePluginSocket(t *testing.T) {
	t.Helper()
	free := os.Getenv("GOKUBELET_TEST_DEVICE_PLUGIN_DIR_FREE")
	if free == "" {
		return
	}
	framework.EventuallyWithin(t, 30*time.Minute, "the integration tiers' kubelets gone from /var/lib/kubelet/device-plugins", func() (bool, string) {
		_, err := os.Stat(free)
		return err == nil, fmt.Sprint(err)
	})
	kubelet.Stop(t)
	kubelet.Start(t)
	node(t)
}

func stopProcess(cmd *osexec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
}

// devicePod asks for one sample device and prints what reached it.
func devicePod(name string) *v1.Pod {
	p := testPod(name)
	c := &p.Spec.Containers[0]
	c.Command = []string{"sh", "-c", "ls /tmp/Dev-*; echo CDI=$CDI_DEVICE; ls /tmp/CDI-*; exec sleep 3600"}
	one := resource.MustParse("1")
	c.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{sampleResource: one}, Requests: v1.ResourceList{sampleResource: one}}
	return p
}

// nodeDevices are the node's capacity and allocatable of the sample
// resource.
func nodeDevices(t *testing.T, name string) (capacity, allocatable int64) {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return -1, -1
	}
	c, a := n.Status.Capacity[sampleResource], n.Status.Allocatable[sampleResource]
	return c.Value(), a.Value()
}

// podDevices are the devices pod-resources List shows for ns/name's
// container main.
func podDevices(t *testing.T, ns, name string) ([]string, error) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+rootDir+"/pod-resources/kubelet.sock", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	list, err := podresourcesv1.NewPodResourcesListerClient(conn).List(context.Background(), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, err
	}
	for _, r := range list.PodResources {
		if r.Namespace != ns || r.Name != name {
			continue
		}
		var ids []string
		for _, c := range r.Containers {
			for _, d := range c.Devices {
				if c.Name == "main" && d.ResourceName == sampleResource {
					ids = append(ids, d.DeviceIds...)
				}
			}
		}
		sort.Strings(ids)
		return ids, nil
	}
	return nil, fmt.Errorf("%s/%s not listed", ns, name)
}

// allocatableDevices are the sample devices pod-resources
// GetAllocatableResources shows.
func allocatableDevices() ([]string, error) {
	conn, err := grpc.NewClient("unix://"+rootDir+"/pod-resources/kubelet.sock", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	r, err := podresourcesv1.NewPodResourcesListerClient(conn).GetAllocatableResources(context.Background(), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, d := range r.Devices {
		if d.ResourceName == sampleResource {
			ids = append(ids, d.DeviceIds...)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// rejected: admission refused the pod for its devices.
func rejected(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed && p.Status.Reason == devices.ReasonUnexpectedAdmissionError
}

// TestDevicePlugins: upstream's sample device plugin registers; its two
// devices become the Node's capacity; pods asking for one each run with
// the mount and the CDI device its Allocate returned, and pod-resources
// shows them; a third pod bound to the node is refused. The kubelet killed
// with -9 comes back with the same assignments and no container
// restarted. The plugin going makes allocatable 0 and refuses new pods,
// while the pods holding devices keep running.
func TestDevicePlugins(t *testing.T) {
	name := node(t)
	ctx := context.Background()
	takeBackDevicePluginSocket(t)
	plugin := startSampleDevicePlugin(t)
	framework.Eventually(t, "the sample devices on the Node", func() (bool, string) {
		c, a := nodeDevices(t, name)
		return c == 2 && a == 2, fmt.Sprintf("capacity %d allocatable %d", c, a)
	})

	ns := namespace(t)
	held := map[string]string{}
	for _, pod := range []string{"dev-a", "dev-b"} {
		createPod(t, ns, devicePod(pod))
		waitPod(t, ns, pod, "Running", running)
		var ids []string
		framework.Eventually(t, pod+"'s device in pod-resources", func() (bool, string) {
			var err error
			ids, err = podDevices(t, ns, pod)
			return err == nil && len(ids) == 1, fmt.Sprint(ids, err)
		})
		id := ids[0]
		held[pod] = id
		// What Allocate returned reached the container: the mount of
		// /tmp/<id>, and the CDI device's env and device node.
		framework.Eventually(t, pod+" shows its device", func() (bool, string) {
			out, errs, _ := kubectl(t, nil, "", ns, "logs", pod)
			return strings.Contains(out, "/tmp/"+id+"\n") && strings.Contains(out, "CDI=CDI-"+id+"\n") && strings.Contains(out, "/tmp/CDI-"+id+"\n"), out + errs
		})
		// The device's health in the container's status
		// (ResourceHealthStatus, on by default in 1.37).
		waitPod(t, ns, pod, "showing its device's health", func(p *v1.Pod) bool {
			for _, cs := range p.Status.ContainerStatuses {
				for _, rs := range cs.AllocatedResourcesStatus {
					if rs.Name == sampleResource && len(rs.Resources) == 1 && string(rs.Resources[0].ResourceID) == id && rs.Resources[0].Health == v1.ResourceHealthStatusHealthy {
						return true
					}
				}
			}
			return false
		})
	}
	if held["dev-a"] == held["dev-b"] {
		t.Fatalf("both pods hold %s", held["dev-a"])
	}

	// No device left: a pod bound to the node directly (the scheduler
	// would not place it) is refused by admission, with upstream's reason.
	extra := devicePod("dev-extra")
	extra.Spec.NodeName = name
	createPod(t, ns, extra)
	p := waitPod(t, ns, "dev-extra", "refused", rejected)
	if !strings.Contains(p.Status.Message, "requested number of devices unavailable for "+sampleResource) {
		t.Errorf("refusal message %q does not say why", p.Status.Message)
	}

	// kill -9 and back: the same assignments, no restart.
	before := map[string]string{}
	for pod := range held {
		got, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[pod] = got.Status.ContainerStatuses[0].ContainerID
	}
	kubelet.Kill9(t)
	kubelet.Start(t)
	node(t)
	// The plugin registers again when it sees the new registration
	// socket (it retries every 10 s): the new kubelet's pod-resources
	// lists its devices as allocatable, and the Node shows them.
	framework.Eventually(t, "the plugin registered again after the restart", func() (bool, string) {
		ids, err := allocatableDevices()
		c, a := nodeDevices(t, name)
		return err == nil && strings.Join(ids, ",") == "Dev-1,Dev-2" && c == 2 && a == 2, fmt.Sprintf("allocatable devices %v (%v); Node capacity %d allocatable %d", ids, err, c, a)
	})
	for pod, id := range held {
		var ids []string
		framework.Eventually(t, pod+" holds the same device after the restart", func() (bool, string) {
			var err error
			ids, err = podDevices(t, ns, pod)
			return err == nil && len(ids) == 1 && ids[0] == id, fmt.Sprintf("%v (%v), want [%s]", ids, err, id)
		})
		got, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cs := got.Status.ContainerStatuses[0]; cs.ContainerID != before[pod] || cs.RestartCount != 0 {
			t.Errorf("%s's container changed across the restart: %s -> %s, %d restarts", pod, before[pod], cs.ContainerID, cs.RestartCount)
		}
	}

	// The plugin goes: nothing is allocatable, a new pod is refused, the
	// pods that hold devices keep running.
	stopProcess(plugin)
	framework.Eventually(t, "allocatable 0 once the plugin is gone", func() (bool, string) {
		c, a := nodeDevices(t, name)
		return c == 2 && a == 0, fmt.Sprintf("capacity %d allocatable %d", c, a)
	})
	late := devicePod("dev-late")
	late.Spec.NodeName = name
	createPod(t, ns, late)
	p = waitPod(t, ns, "dev-late", "refused", rejected)
	if !strings.Contains(p.Status.Message, "no healthy devices present") {
		t.Errorf("refusal message %q does not say why", p.Status.Message)
	}
	for pod := range held {
		got := waitPod(t, ns, pod, "still Running", running)
		if cs := got.Status.ContainerStatuses[0]; cs.ContainerID != before[pod] || cs.RestartCount != 0 {
			t.Errorf("%s's container changed after the plugin went: %s -> %s, %d restarts", pod, before[pod], cs.ContainerID, cs.RestartCount)
		}
	}
}
