package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod whose volume cannot be set up waits with a message naming it, and
// the message goes once the volume is ready.
func TestPrepareVolumesWaitsThenClears(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	host := filepath.Join(t.TempDir(), "later")
	typ := v1.HostPathDirectory
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "h", MountPath: "/h"}}}},
		Volumes:    []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &typ}}}},
	}}
	wait, retry := h.eng.prepareVolumes(ctx, pod, nil)
	if !wait || retry != time.Second {
		t.Fatalf("wait %v retry %v", wait, retry)
	}
	w := h.eng.reasons.get(pod.UID)["c"]
	if w.Reason != "ContainerCreating" || !strings.Contains(w.Message, `unmounted volumes=[h]`) || !strings.Contains(w.Message, "does not exist") {
		t.Errorf("waiting reason %+v", w)
	}
	st, _ := h.core.Status().GetPodStatus(pod.UID)
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Message != w.Message {
		t.Errorf("status %+v", st.ContainerStatuses)
	}

	if err := os.Mkdir(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if wait, _ := h.eng.prepareVolumes(ctx, pod, nil); wait {
		t.Fatal("still waiting once the volume is there")
	}
	if w := h.eng.reasons.get(pod.UID)["c"]; w.Reason != "" {
		t.Errorf("reason kept: %+v", w)
	}
	if err := h.eng.releaseVolumes(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
}
