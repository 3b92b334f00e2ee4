package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gokubelet/kubelet/pkg/config/kubeletconfig"
	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
	"github.com/gokubelet/kubelet/pkg/pod/podmanager"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

type typeOnlyRuntime struct{ container.Runtime }

func (typeOnlyRuntime) Type() string { return "fake" }

// A pod whose volume cannot be set up waits with a message naming it, and
// the message goes once the volume is ready.
func TestPrepareVolumesWaitsThenClears(t *testing.T) {
	root := t.TempDir()
	status := fakeStatus{}
	k := &Kubelet{clock: clocktesting.NewFakeClock(time.Now()), status: status, runtime: typeOnlyRuntime{},
		settings: &kubeletconfig.Settings{RootDir: root}, cfg: &kubeletv1beta1.KubeletConfiguration{},
		recorder: record.NewFakeRecorder(10), pods: podmanager.New()}
	ctx := context.Background()
	k.vols = k.newVolumeParts(ctx, nil, machineinfo.Info{NumCPU: 2, MemoryCapacityBytes: 1 << 30})

	host := filepath.Join(root, "later")
	typ := v1.HostPathDirectory
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "h", MountPath: "/h"}}}},
		Volumes:    []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &typ}}}},
	}}
	wait, retry := k.prepareVolumes(ctx, pod, nil)
	if !wait || retry != time.Second {
		t.Fatalf("wait %v retry %v", wait, retry)
	}
	w := k.reasons.get(pod.UID)["c"]
	if w.Reason != "ContainerCreating" || !strings.Contains(w.Message, `unmounted volumes=[h]`) || !strings.Contains(w.Message, "does not exist") {
		t.Errorf("waiting reason %+v", w)
	}
	st := status[pod.UID]
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Message != w.Message {
		t.Errorf("status %+v", st.ContainerStatuses)
	}

	os.Mkdir(host, 0o755)
	if wait, _ := k.prepareVolumes(ctx, pod, nil); wait {
		t.Fatal("still waiting once the volume is there")
	}
	if w := k.reasons.get(pod.UID)["c"]; w.Reason != "" {
		t.Errorf("reason kept: %+v", w)
	}
	if err := k.releaseVolumes(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
}
