package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gokubelet/kubelet/pkg/metrics/metricstest"
	"github.com/gokubelet/kubelet/test/framework"
)

// podDynamicResources are the CDI devices pod-resources List shows for
// ns/name's container main.
func podDynamicResources(ns, name string) ([]string, error) {
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
			if c.Name != "main" {
				continue
			}
			for _, d := range c.DynamicResources {
				for _, cr := range d.ClaimResources {
					for _, cdi := range cr.CdiDevices {
						ids = append(ids, cdi.Name)
					}
				}
			}
		}
		return ids, nil
	}
	return nil, fmt.Errorf("%s/%s not listed", ns, name)
}

// TestDRAClaims: upstream's DRA test driver registers through the
// plugins_registry; the scheduler allocates a pod's claim from the
// driver's ResourceSlice; the kubelet prepares it before the sandbox, and
// the CDI device the driver returned reaches the container (containerd
// applies the driver's CDI spec: an env var naming the claim);
// pod-resources lists it. A kubelet killed with -9 keeps the claim and
// restarts nothing; deleting the pod unprepares the claim (the driver
// removes its CDI spec). The driver going: the kubelet deletes its
// ResourceSlices after the wiping delay.
// claimsInUse is the kubelet's dra_resource_claims_in_use for driver and
// for "<any>", as "driver N, <any> M" ("none" for a missing series).
func claimsInUse(driver string) string {
	f, err := scrape("/metrics")
	if err != nil {
		return err.Error()
	}
	value := func(name string) string {
		m := f.Find("dra_resource_claims_in_use", map[string]string{"driver_name": name})
		switch len(m) {
		case 0:
			return "none"
		case 1:
			return fmt.Sprint(metricstest.Value(m[0]))
		}
		return fmt.Sprintf("%d series", len(m))
	}
	return fmt.Sprintf("driver %s, <any> %s", value(driver), value("<any>"))
}

func TestDRAClaims(t *testing.T) {
	node(t)
	ctx := context.Background()
	driver := fmt.Sprintf("dra-%d.e2e.gokubelet.io", time.Now().UnixNano()%100000)
	d := startDRATestDriver(t, driver)
	framework.Eventually(t, "the driver's ResourceSlice", func() (bool, string) {
		if d.Exited() {
			t.Fatalf("DRA test driver exited: %s", framework.Tail(d.Log(), 30))
		}
		got, err := d.Slices(ctx)
		return err == nil && len(got) > 0, fmt.Sprint(len(got), err)
	})

	ns := namespace(t)
	_, tmpl := draObjects(t, ns, driver)
	createPod(t, ns, draPod("dra-a", tmpl))
	p := waitPod(t, ns, "dra-a", "Running", running)
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		t.Fatalf("no generated claim in the pod's status: %+v", p.Status.ResourceClaimStatuses)
	}
	claimName := *p.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimUID := string(claim.UID)
	framework.Eventually(t, "the claim's CDI env in the container", func() (bool, string) {
		out, errs, _ := kubectl(t, nil, "", ns, "logs", "dra-a")
		return strings.Contains(out, draClaimEnv(claimName)+"\n"), out + errs
	})
	wantCDI := draCDIDeviceID(driver, claimUID)
	// The device in the container's allocatedResourcesStatus
	// (ResourceHealthStatus). The test driver streams health reports but,
	// run as a process, reports no device, so its health is Unknown, as
	// upstream shows a device without a report.
	waitPod(t, ns, "dra-a", "showing its claim's device health", func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			for _, rs := range cs.AllocatedResourcesStatus {
				if rs.Name == "claim:"+draPodClaim && len(rs.Resources) == 1 && string(rs.Resources[0].ResourceID) == wantCDI && rs.Resources[0].Health == v1.ResourceHealthStatusUnknown {
					return true
				}
			}
		}
		return false
	})
	framework.Eventually(t, "the claim's device in pod-resources", func() (bool, string) {
		ids, err := podDynamicResources(ns, "dra-a")
		return err == nil && strings.Join(ids, ",") == wantCDI, fmt.Sprintf("%v (%v), want [%s]", ids, err, wantCDI)
	})

	// dra_resource_claims_in_use counts the prepared claim, by driver and
	// under "<any>".
	framework.Eventually(t, "dra_resource_claims_in_use with the claim", func() (bool, string) {
		got := claimsInUse(driver)
		return got == "driver 1, <any> 1", got
	})

	// kill -9 and back: the same container, the claim still known.
	before := p.Status.ContainerStatuses[0].ContainerID
	oldSlices := map[string]bool{}
	if got, err := d.Slices(ctx); err == nil {
		for _, sl := range got {
			oldSlices[string(sl.UID)] = true
		}
	}
	kubelet.Kill9(t)
	kubelet.Start(t)
	node(t)
	framework.Eventually(t, "the claim's device in pod-resources after the restart", func() (bool, string) {
		ids, err := podDynamicResources(ns, "dra-a")
		return err == nil && strings.Join(ids, ",") == wantCDI, fmt.Sprintf("%v (%v)", ids, err)
	})
	p = waitPod(t, ns, "dra-a", "Running", running)
	if cs := p.Status.ContainerStatuses[0]; cs.ContainerID != before || cs.RestartCount != 0 {
		t.Errorf("the container changed across the restart: %s -> %s, %d restarts", before, cs.ContainerID, cs.RestartCount)
	}
	// The restarted kubelet deleted the node's ResourceSlices at start (as
	// upstream's does); the running driver publishes its slice again (its
	// slice controller batches changes for up to 30 s).
	framework.Eventually(t, "the driver's ResourceSlice deleted and published again after the kubelet's start", func() (bool, string) {
		got, err := d.Slices(ctx)
		var uids []string
		fresh := err == nil && len(got) > 0
		for _, sl := range got {
			uids = append(uids, string(sl.UID))
			fresh = fresh && !oldSlices[string(sl.UID)]
		}
		return fresh, fmt.Sprintf("slices %v (before the restart %v) %v", uids, oldSlices, err)
	})

	// The pod goes: the claim is unprepared (the driver removes its CDI
	// spec).
	spec := draCDISpecFile(driver, claimUID)
	if _, err := os.Stat(spec); err != nil {
		t.Fatalf("the driver's CDI spec %s: %v", spec, err)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "dra-a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "dra-a")
	framework.Eventually(t, "the claim unprepared", func() (bool, string) {
		_, err := os.Stat(spec)
		return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
	})
	framework.Eventually(t, "dra_resource_claims_in_use back to none", func() (bool, string) {
		got := claimsInUse(driver)
		return got == "driver none, <any> 0", got
	})

	// A pod whose claim cannot be prepared waits, saying why: the driver
	// is gone, so the kubelet cannot prepare a claim allocated from the
	// slice that is still published.
	d.Stop(t)
	createPod(t, ns, draPod("dra-b", tmpl))
	waitPod(t, ns, "dra-b", "waiting with the reason", func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && strings.Contains(w.Message, "DRA driver "+driver+" is not registered") {
				return true
			}
		}
		return false
	})
	// After upstream's wiping delay (30 s) the kubelet deletes the gone
	// driver's ResourceSlices.
	framework.Eventually(t, "the gone driver's ResourceSlices deleted", func() (bool, string) {
		got, err := d.Slices(ctx)
		return err == nil && len(got) == 0, fmt.Sprint(len(got), err)
	})
}
