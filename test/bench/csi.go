package main

// The CSI workload: pods that each mount their own pre-provisioned CSI
// volume of upstream's mock CSI driver (hack/csi-mock: the driver upstream's
// csi-mock e2e specs use, as a node plugin registered through the kubelet's
// plugins_registry). Each kubelet gets a fresh driver process registered
// with it; the bench creates the volumes in that driver (CreateVolume on its
// controller service, as a provisioner would), then a PersistentVolume and
// a claim bound to it per pod, and only then times the pods: from create to
// running, through the kubelet's NodeStageVolume and NodePublishVolume. The
// mock mounts nothing (it records the volume and makes the target
// directory), so the figure is the kubelets' share of a CSI volume's
// set-up: finding the driver, the API reads (claim, volume, CSIDriver), the
// calls and their bookkeeping. The floor has no counterpart.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// benchCSIDriver is the mock driver's name in the bench.
const benchCSIDriver = "bench.csi.gokubelet.io"

// csiDriverProc is one mock driver process, registered with one kubelet.
type csiDriverProc struct {
	cmd      *exec.Cmd
	endpoint string
	exited   chan struct{}
}

// startCSIDriver runs the mock driver with its registration socket in the
// kubelet's root dir, and waits until the kubelet accepted it.
func startCSIDriver(bin, root, workDir, logPath string) (*csiDriverProc, error) {
	endpoint := filepath.Join(workDir, "csi-mock.sock")
	reg := filepath.Join(root, "plugins_registry", benchCSIDriver+"-reg.sock")
	if err := os.MkdirAll(filepath.Dir(reg), 0o750); err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-endpoint", endpoint, "-registration", reg, "-name", benchCSIDriver)
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	d := &csiDriverProc{cmd: cmd, endpoint: endpoint, exited: make(chan struct{})}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			select {
			case said <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
		logf.Close()
		close(d.exited)
	}()
	select {
	case s := <-said:
		if s != "registered" {
			d.stop()
			return nil, fmt.Errorf("mock CSI driver: %s", s)
		}
	case <-d.exited:
		return nil, fmt.Errorf("mock CSI driver exited at start (log: %s)", logPath)
	case <-time.After(60 * time.Second):
		d.stop()
		return nil, fmt.Errorf("mock CSI driver not registered with the kubelet after 60s (log: %s)", logPath)
	}
	return d, nil
}

func (d *csiDriverProc) stop() { stopProcess(d.cmd.Process, d.exited, 10*time.Second) }

// createVolumes provisions n volumes in the driver, as a provisioner
// would, and returns their handles.
func (d *csiDriverProc) createVolumes(ctx context.Context, prefix string, n int) ([]string, error) {
	conn, err := grpc.NewClient("unix://"+d.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	c := csipb.NewControllerClient(conn)
	handles := make([]string, n)
	for i := range handles {
		resp, err := c.CreateVolume(ctx, &csipb.CreateVolumeRequest{
			Name:          fmt.Sprintf("%s-%03d", prefix, i),
			CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 30},
			VolumeCapabilities: []*csipb.VolumeCapability{{
				AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
				AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}},
		})
		if err != nil {
			return nil, fmt.Errorf("CreateVolume: %w", err)
		}
		handles[i] = resp.GetVolume().GetVolumeId()
	}
	return handles, nil
}

// ensureCSIDriverObject creates the mock's CSIDriver object: no attach,
// persistent volumes.
func (b *bench) ensureCSIDriverObject(ctx context.Context) error {
	_, err := b.cs.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: benchCSIDriver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// csiClaims creates a PersistentVolume per handle and a claim in ns bound
// to it (each names the other), and waits until every claim is Bound.
func (b *bench) csiClaims(ctx context.Context, ns string, claims, handles []string) (pvs []string, err error) {
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	for i, claim := range claims {
		pv := ns + "-" + claim
		pvs = append(pvs, pv)
		if _, err := b.cs.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv},
			Spec: v1.PersistentVolumeSpec{StorageClassName: "", Capacity: size, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
				ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
				PersistentVolumeSource:        v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: benchCSIDriver, VolumeHandle: handles[i]}}},
		}, metav1.CreateOptions{}); err != nil {
			return pvs, err
		}
		if _, err := b.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim},
			Spec: v1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(""), VolumeName: pv, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: size}}}, metav1.CreateOptions{}); err != nil {
			return pvs, err
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		list, err := b.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return pvs, err
		}
		bound := 0
		for _, c := range list.Items {
			if c.Status.Phase == v1.ClaimBound {
				bound++
			}
		}
		if bound == len(claims) {
			return pvs, nil
		}
		if time.Now().After(deadline) {
			return pvs, fmt.Errorf("%d of %d claims bound after 120s", bound, len(claims))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// csiPod is benchPod with the claim of the same name mounted.
func csiPod(name string) *v1.Pod {
	p := benchPod(name)
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

// runCSI is the CSI workload of one kubelet's round: a stream of pods, each
// with its own pre-provisioned CSI volume. The pods are deleted and their
// volumes torn down before it returns.
func (b *bench) runCSI(ctx context.Context, kind, dir, ns string, t *tracker) (err error) {
	o := b.opt
	if err := b.ensureCSIDriverObject(ctx); err != nil {
		return err
	}
	d, err := startCSIDriver(o.csiMock, filepath.Join(dir, "root"), dir, dir+"-csi-mock.log")
	if err != nil {
		return err
	}
	defer d.stop()
	names := podNames("csi", o.csiPods)
	handles, err := d.createVolumes(ctx, ns, len(names))
	if err != nil {
		return err
	}
	pvs, err := b.csiClaims(ctx, ns, names, handles)
	defer func() {
		for _, claim := range names {
			_ = b.cs.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), claim, metav1.DeleteOptions{})
		}
		for _, pv := range pvs {
			_ = b.cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{})
		}
	}()
	if err != nil {
		return err
	}
	if err := b.podStream(ctx, kind, "csi", ns, t, names, o.csiEvery, csiPod, nil); err != nil {
		return err
	}
	// The volumes are torn down after the pods are gone; wait for it, so
	// that the next workload starts on a quiet kubelet and the driver is
	// not stopped under an unpublish.
	root := filepath.Join(dir, "root", "plugins", "kubernetes.io", "csi", benchCSIDriver)
	deadline := time.Now().Add(120 * time.Second)
	for {
		entries, err := os.ReadDir(root)
		if os.IsNotExist(err) || (err == nil && len(entries) == 0) {
			return nil
		}
		if time.Now().After(deadline) {
			var left []string
			for _, e := range entries {
				left = append(left, e.Name())
			}
			return fmt.Errorf("csi: volumes still staged 120s after their pods went: %s", strings.Join(left, " "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
