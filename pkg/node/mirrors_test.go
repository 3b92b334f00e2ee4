package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func TestOrphanGoes(t *testing.T) {
	now := metav1.Now()
	mirror := func(hash string, deleting *int64) *v1.Pod {
		m := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n", Namespace: "default", UID: "mirror-uid",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile}}}
		if hash != "" {
			m.Annotations[podspec.ConfigMirrorAnnotation] = hash
		}
		if deleting != nil {
			m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &now, deleting
		}
		return m
	}
	stopping := map[types.UID]bool{"static-stopping": true}
	terminated := func(uid types.UID) bool { return !stopping[uid] }
	for _, tc := range []struct {
		name string
		m    *v1.Pod
		want bool
	}{
		{"its static pod has terminated", mirror("static-done", nil), true},
		{"its static pod is still stopping: it stays through the grace period", mirror("static-stopping", nil), false},
		{"no config.mirror hash", mirror("", nil), true},
		{"someone started a graceful deletion", mirror("static-done", ptr.To[int64](30)), true},
		{"a graceful deletion while its static pod stops", mirror("static-stopping", ptr.To[int64](30)), false},
		{"already deleted with grace period 0", mirror("static-done", ptr.To[int64](0)), false},
	} {
		if got := orphanGoes(tc.m, terminated); got != tc.want {
			t.Errorf("%s: orphanGoes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
