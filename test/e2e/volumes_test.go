package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/volume/hostfs"
	"github.com/gokubelet/kubelet/test/framework"
)

// The volume tests assert what a container sees through its own exit code
// and termination message (the script checks and reports), and what the
// node holds through the kubelet's root dir on the host.

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// shellPod runs script with sh in the test image, once.
func shellPod(name, script string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
		RestartPolicy:                 v1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []v1.Container{{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"sh", "-c", script}}},
	}}
}

func createPod(t *testing.T, ns string, p *v1.Pod) *v1.Pod {
	t.Helper()
	out, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func succeeded(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// terminationMessage is the main container's termination message.
func terminationMessage(p *v1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			return c.State.Terminated.Message
		}
	}
	return ""
}

func podVolumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(rootDir, "pods", string(uid), "volumes", plugin, name)
}

// apiServerFromPods is the API server as a pod reaches it: the node's IP
// (there is no kube-proxy for the kubernetes Service here).
func apiServerFromPods(t *testing.T) string {
	u, err := url.Parse(clusterEnv["APISERVER_URL"])
	if err != nil || clusterEnv["NODE_IP"] == "" {
		t.Fatalf("cluster env: APISERVER_URL %q NODE_IP %q", clusterEnv["APISERVER_URL"], clusterEnv["NODE_IP"])
	}
	return "https://" + clusterEnv["NODE_IP"] + ":" + u.Port()
}

// whoAmI is the testserver invocation asking the API server who the pod's
// token belongs to.
func whoAmI(t *testing.T, output string) []string {
	cmd := []string{"/testserver",
		"--fetch=" + apiServerFromPods(t) + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`--post-body={"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
		"--ca-file=" + saDir + "/ca.crt", "--bearer-token-file=" + saDir + "/token"}
	if output != "" {
		cmd = append(cmd, "--output="+output)
	}
	return cmd
}

// A Deployment created with the cluster's defaults gets the projected
// service account volume (token, kube-root-ca.crt, namespace); its
// containers call the API server with that token, verified by that CA.
func TestServiceAccountTokenReachesTheAPIServer(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()

	// One pod asks who it is and reports the answer.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "whoami"}, Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: whoAmI(t, "/dev/termination-log")}},
	}}
	createPod(t, ns, pod)
	got := waitPod(t, ns, "whoami", "finished", succeeded)
	msg := terminationMessage(got)
	if got.Status.Phase != v1.PodSucceeded || !strings.Contains(msg, `"username":"system:serviceaccount:`+ns+`:default"`) {
		t.Fatalf("phase %s, termination message %q: want a SelfSubjectReview of the default service account", got.Status.Phase, msg)
	}
	var projected bool
	for _, v := range got.Spec.Volumes {
		projected = projected || (v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-"))
	}
	if !projected {
		t.Errorf("the pod has no kube-api-access volume: %+v", got.Spec.Volumes)
	}

	// A Deployment whose readiness is that same call becomes available.
	labels := map[string]string{"app": "sa-client"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sa-client"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: whoAmI(t, "")}},
						PeriodSeconds: 2, TimeoutSeconds: 10}}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, "the Deployment available", func() (bool, string) {
		cur, err := client.AppsV1().Deployments(ns).Get(ctx, "sa-client", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cur.Status.AvailableReplicas == 2, fmt.Sprintf("available %d", cur.Status.AvailableReplicas)
	})
}

// Every volume type the node provides, as the container sees it: content,
// modes, ownership with fsGroup, tmpfs and its size, read-only mounts,
// subPaths; and as the node holds it under the kubelet's root dir, until
// the pod is gone.
func TestVolumesAsTheContainerSeesThem(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"key": "value", "other": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		Data: map[string][]byte{"password": []byte("hunter2")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The hostPath exists and is writable by the pod's user (the kubelet
	// creates a missing one as root, 0755).
	hostDir := filepath.Join(os.TempDir(), "gokubelet-e2e-hostpath-"+ns)
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(hostDir, 0o777)
	t.Cleanup(func() { os.RemoveAll(hostDir) })

	script := `
fail=0
check() { if [ "$2" != "$3" ]; then echo "FAIL $1: got '$2' want '$3'" >> /scratch/result; fail=1; fi; }
: > /scratch/result
check scratch-owner "$(stat -c '%a %g' /scratch)" "2777 1234"
touch /scratch/new; check new-file-group "$(stat -c %g /scratch/new)" 1234
check ro-scratch "$(touch /ro/x 2>/dev/null && echo writable || echo refused)" refused
check mem-type "$(grep -c ' /mem tmpfs ' /proc/mounts)" 1
check mem-size "$(df -k /mem | tail -1 | awk '{print $2}')" 10240
check cfg-key "$(cat /cfg/dir/key)" value
check cfg-mode "$(stat -L -c '%a %g' /cfg/dir/key)" "440 1234"
check cfg-other "$(cat /cfg/other 2>/dev/null || echo absent)" absent
check cfg-ro "$(touch /cfg/x 2>/dev/null && echo writable || echo refused)" refused
check cfg-file "$(cat /etc/cfg-file)" value
check sec "$(cat /sec/password)" hunter2
check sec-mode "$(stat -L -c %a /sec/password)" 440
check sec-type "$(grep -c ' /sec tmpfs ' /proc/mounts)" 1
check down-name "$(cat /down/name)" vols
check down-labels "$(cat /down/labels)" 'app="volumes"'
check down-cpu "$(cat /down/cpu)" 500
check sa-namespace "$(cat ` + saDir + `/namespace)" "$NS"
check sa-token "$(stat -L -c '%a %u %g' ` + saDir + `/token)" "640 1000 1234"
check sa-ca "$(head -c 27 ` + saDir + `/ca.crt)" "-----BEGIN CERTIFICATE-----"
check host-sub "$(echo from-pod > /host-sub/file && echo ok)" ok
[ $fail = 0 ] && echo ok >> /scratch/result
until [ -e /scratch/done ]; do sleep 0.2; done
exit $fail
`
	pod := shellPod("vols", script)
	pod.Labels = map[string]string{"app": "volumes"}
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "NS", Value: ns}}
	c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](1234)}
	dirOrCreate := v1.HostPathDirectoryOrCreate
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("10Mi"))}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			DefaultMode: ptr.To[int32](0o400), Items: []v1.KeyToPath{{Key: "key", Path: "dir/key"}}}}},
		{Name: "cfg-all", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		}}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}}},
	}
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/ro", ReadOnly: true},
		{Name: "mem", MountPath: "/mem"},
		{Name: "cfg", MountPath: "/cfg"},
		{Name: "cfg-all", MountPath: "/etc/cfg-file", SubPath: "key"},
		{Name: "sec", MountPath: "/sec"},
		{Name: "down", MountPath: "/down"},
		{Name: "host", MountPath: "/host-sub", SubPath: "a/b"},
	}
	pod = createPod(t, ns, pod)

	// The container reports through the emptyDir, read on the host where
	// the upstream kubelet keeps it.
	result := filepath.Join(podVolumeDir(pod.UID, "kubernetes.io~empty-dir", "scratch"), "result")
	framework.Eventually(t, "the container's checks", func() (bool, string) {
		b, err := os.ReadFile(result)
		return err == nil && strings.HasSuffix(string(b), "ok\n") || strings.Contains(string(b), "FAIL"), fmt.Sprint(err)
	})
	if b, _ := os.ReadFile(result); string(b) != "ok\n" {
		t.Errorf("the container saw:\n%s", b)
	}

	// The node's side while the pod runs.
	cfgDir := podVolumeDir(pod.UID, "kubernetes.io~configmap", "cfg")
	if target, err := os.Readlink(filepath.Join(cfgDir, "..data")); err != nil || !strings.HasPrefix(target, "..") {
		t.Errorf("configMap ..data link: %q, %v", target, err)
	}
	for _, d := range []string{podVolumeDir(pod.UID, "kubernetes.io~secret", "sec"), podVolumeDir(pod.UID, "kubernetes.io~empty-dir", "mem")} {
		if ok, err := hostfs.IsMountPoint(d); !ok {
			t.Errorf("%s is not a mount (tmpfs): %v", d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(hostDir, "a", "b", "file")); err != nil || string(b) != "from-pod\n" {
		t.Errorf("hostPath subPath on the host: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(result), "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "vols", "finished", succeeded)
	if got.Status.Phase != v1.PodSucceeded {
		t.Errorf("phase %s: %+v", got.Status.Phase, got.Status.ContainerStatuses)
	}

	// Once the pod stopped, its volumes are gone from the node (hostPath
	// data stays).
	podDir := filepath.Join(rootDir, "pods", string(pod.UID))
	framework.Eventually(t, "volumes torn down", func() (bool, string) {
		m, _ := hostfs.MountsUnder(podDir)
		_, err := os.Stat(filepath.Join(podDir, "volumes"))
		return len(m) == 0 && os.IsNotExist(err), fmt.Sprintf("mounts %v, volumes dir: %v", m, err)
	})
	if _, err := os.Stat(filepath.Join(hostDir, "a", "b", "file")); err != nil {
		t.Errorf("hostPath data after teardown: %v", err)
	}
}

// A ConfigMap edit and a label change reach a running pod's volumes
// without a restart.
func TestLiveUpdatesReachTheVolume(t *testing.T) {
	node(t)
	ns := namespace(t)
	ctx := context.Background()
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"key": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := shellPod("live", `
until [ "$(cat /etc/cfg/key)" = v2 ]; do sleep 0.2; done
until grep -q 'stage="two"' /etc/pod/labels; do sleep 0.2; done
echo saw-both > /dev/termination-log`)
	pod.Labels = map[string]string{"stage": "one"}
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "pod", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "pod", MountPath: "/etc/pod"}}
	pod = createPod(t, ns, pod)
	waitPod(t, ns, "live", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if b, err := os.ReadFile(filepath.Join(podVolumeDir(pod.UID, "kubernetes.io~configmap", "cfg"), "key")); err != nil || string(b) != "v1" {
		t.Fatalf("on the host before the edit: %q, %v", b, err)
	}

	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["key"] = "v2"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A patch: the kubelet writes this pod's status meanwhile, so a read
	// and an Update could lose to it (issue 7).
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "live", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"stage":"two"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, ns, "live", "finished", succeeded)
	if got.Status.Phase != v1.PodSucceeded || strings.TrimSpace(terminationMessage(got)) != "saw-both" || got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("phase %s message %q: want Succeeded, saw-both, no restart", got.Status.Phase, terminationMessage(got))
	}
}

// waitingFor waits until the main container waits with reason and a
// message containing every part.
func waitingFor(t *testing.T, ns, name, reason string, parts ...string) *v1.Pod {
	t.Helper()
	return waitPod(t, ns, name, "waiting with "+reason, func(p *v1.Pod) bool {
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && w.Reason == reason {
				for _, part := range parts {
					if !strings.Contains(w.Message, part) {
						return false
					}
				}
				return true
			}
		}
		return false
	})
}

// A subPath that leads outside its volume — through a symlink a container
// planted, or ../ from a subPathExpr — is refused: the container never
// starts, and says why.
func TestSubPathOutsideTheVolumeIsRefused(t *testing.T) {
	node(t)
	ns := namespace(t)
	pod := shellPod("escape", "cat /mnt/passwd; sleep 3600")
	pod.Spec.InitContainers = []v1.Container{{Name: "plant", Image: testImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command:      []string{"sh", "-c", "ln -s /etc /vol/escape && ln -s ../../../../../../etc /vol/up"},
		VolumeMounts: []v1.VolumeMount{{Name: "vol", MountPath: "/vol"}}}}
	pod.Spec.Volumes = []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "vol", MountPath: "/mnt", SubPath: "escape"}}
	createPod(t, ns, pod)
	waitingFor(t, ns, "escape", "CreateContainerConfigError", "subPath", "outside the volume")

	up := shellPod("up", "sleep 3600")
	up.Spec.InitContainers = pod.Spec.InitContainers
	up.Spec.Volumes = pod.Spec.Volumes
	up.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "vol", MountPath: "/mnt", SubPath: "up/shadow"}}
	createPod(t, ns, up)
	waitingFor(t, ns, "up", "CreateContainerConfigError", "subPath", "outside the volume")

	expr := shellPod("expr", "sleep 3600")
	expr.Spec.Volumes = pod.Spec.Volumes
	expr.Spec.Containers[0].Env = []v1.EnvVar{{Name: "DIR", Value: "../../../etc"}}
	expr.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "vol", MountPath: "/mnt", SubPathExpr: "$(DIR)"}}
	createPod(t, ns, expr)
	waitingFor(t, ns, "expr", "CreateContainerConfigError", "subPath", "..")
}

// Volumes the node cannot provide, or cannot provide yet, keep the pod
// waiting with a reason naming the volume and its type, and an event.
func TestVolumesTheNodeCannotProvideYet(t *testing.T) {
	name := node(t)
	ns := namespace(t)
	ctx := context.Background()

	nfs := shellPod("nfs", "true")
	nfs.Spec.Volumes = []v1.Volume{{Name: "share", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "192.0.2.250", Path: "/export"}}}}
	nfs.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "share", MountPath: "/share"}}
	createPod(t, ns, nfs)
	waitingFor(t, ns, "nfs", "ContainerCreating", `volume "share" has type nfs, which this node cannot provide`)
	framework.Eventually(t, "a FailedMount event", func() (bool, string) {
		l, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nfs,reason=FailedMount"})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) > 0 && strings.Contains(l.Items[0].Message, "nfs"), fmt.Sprint(len(l.Items))
	})

	// A missing ConfigMap: the pod waits; once created, it runs.
	cm := shellPod("cm-later", `test "$(cat /cfg/k)" = here`)
	cm.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}}}
	cm.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	createPod(t, ns, cm)
	waitingFor(t, ns, "cm-later", "ContainerCreating", `configmaps "later" not found`)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"k": "here"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitPod(t, ns, "cm-later", "finished", succeeded); got.Status.Phase != v1.PodSucceeded {
		t.Errorf("after the ConfigMap appeared: %s %+v", got.Status.Phase, got.Status.ContainerStatuses)
	}

	// A claim not bound yet (the pod skips the scheduler): the pod waits
	// until a hostPath PersistentVolume is bound to it, then sees its data.
	class := "e2e-static-" + ns
	hostDir := filepath.Join(os.TempDir(), "gokubelet-e2e-pv-"+ns)
	os.MkdirAll(hostDir, 0o755)
	os.WriteFile(filepath.Join(hostDir, "data"), []byte("on-the-pv"), 0o644)
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if _, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}, Spec: v1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(class), AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}}}}
	if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claimPod := shellPod("claim", `test "$(cat /data/data)" = on-the-pv`)
	claimPod.Spec.NodeName = name
	claimPod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}
	claimPod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	createPod(t, ns, claimPod)
	waitingFor(t, ns, "claim", "ContainerCreating", `PersistentVolumeClaim "claim" is not bound`)
	pvName := "e2e-pv-" + ns
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName}, Spec: v1.PersistentVolumeSpec{
		StorageClassName: class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")},
		PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}}}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	if got := waitPod(t, ns, "claim", "finished", succeeded); got.Status.Phase != v1.PodSucceeded {
		t.Errorf("once bound: %s %+v", got.Status.Phase, got.Status.ContainerStatuses)
	}

	// A generic ephemeral volume: the controller creates the pod's claim,
	// it binds to a PersistentVolume, the pod runs on it.
	ephDir := filepath.Join(os.TempDir(), "gokubelet-e2e-eph-"+ns)
	os.MkdirAll(ephDir, 0o755)
	os.WriteFile(filepath.Join(ephDir, "data"), []byte("ephemeral"), 0o644)
	t.Cleanup(func() { os.RemoveAll(ephDir) })
	ephPV := pv.DeepCopy()
	ephPV.Name, ephPV.ResourceVersion = pvName+"-eph", ""
	ephPV.Spec.HostPath.Path = ephDir
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, ephPV, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.CoreV1().PersistentVolumes().Delete(context.Background(), ephPV.Name, metav1.DeleteOptions{})
	})
	eph := shellPod("eph", `test "$(cat /scratch/data)" = ephemeral`)
	eph.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: pvc.Spec}}}}}
	eph.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	createPod(t, ns, eph)
	if got := waitPod(t, ns, "eph", "finished", succeeded); got.Status.Phase != v1.PodSucceeded {
		t.Errorf("ephemeral volume: %s %+v", got.Status.Phase, got.Status.ContainerStatuses)
	}
}

// A disk-backed emptyDir that grows past its sizeLimit gets its pod
// evicted, as upstream: Failed, reason Evicted.
func TestEmptyDirOverItsSizeLimitIsEvicted(t *testing.T) {
	node(t)
	ns := namespace(t)
	pod := shellPod("hog", "dd if=/dev/zero of=/scratch/f bs=1M count=4 && sleep 3600")
	pod.Spec.RestartPolicy = v1.RestartPolicyAlways
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	createPod(t, ns, pod)
	got := waitPod(t, ns, "hog", "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if got.Status.Reason != "Evicted" || !strings.Contains(got.Status.Message, `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi"`) {
		t.Errorf("reason %q message %q", got.Status.Reason, got.Status.Message)
	}
}
