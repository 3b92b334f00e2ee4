package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

func TestStaleMirrorGoes(t *testing.T) {
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
		if got := staleMirrorGoes(tc.m, terminated); got != tc.want {
			t.Errorf("%s: staleMirrorGoes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A static pod's status goes to its own mirror only: while the pod it
// replaced (same full name, an older manifest) stops, the mirror there is
// the old pod's and keeps the old pod's status.
func TestStatusTargetIsTheStaticPodsOwnMirror(t *testing.T) {
	l := &lifecycle{}
	l.running.Store(true)
	core := startCore(t, fakeAPI(), l)
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-virt-1", Namespace: "default", UID: "new-hash",
		Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile, podspec.ConfigHashAnnotation: "new-hash"}}}
	mirror := func(hash string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-virt-1", Namespace: "default", UID: types.UID("mirror-of-" + hash),
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile, podspec.ConfigMirrorAnnotation: hash}}}
	}
	core.Pods().AddOrUpdate(static, mirror("old-hash"))
	if tgt, ok := (resolver{core}).StatusTarget("new-hash"); ok {
		t.Errorf("status target = %s while the old pod's mirror is there, want none yet", tgt.Pod.UID)
	}
	core.Pods().AddOrUpdate(mirror("new-hash"))
	if tgt, ok := (resolver{core}).StatusTarget("new-hash"); !ok || tgt.Pod.UID != "mirror-of-new-hash" || !tgt.Mirror {
		t.Errorf("status target = %+v, %v; want its own mirror", tgt, ok)
	}
}

// The mirror under a running static pod's name is kept only while it
// mirrors a replaced static pod that still stops; the pod's own mirror that
// someone deleted is recreated at once (e2e TestStaticPodHasAMirrorPod).
func TestKeepReplacedMirror(t *testing.T) {
	now := metav1.Now()
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n", Namespace: "default", UID: "new-hash",
		Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile, podspec.ConfigHashAnnotation: "new-hash"}}}
	mirror := func(hash string, deleting bool) *v1.Pod {
		m := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-n", Namespace: "default", UID: "mirror-uid",
			Annotations: map[string]string{podspec.ConfigSourceAnnotation: podspec.SourceFile, podspec.ConfigMirrorAnnotation: hash}}}
		if deleting {
			m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &now, ptr.To[int64](30)
		}
		return m
	}
	stopping := map[types.UID]bool{"old-hash": true, "new-hash": true}
	terminated := func(uid types.UID) bool { return !stopping[uid] }
	for _, tc := range []struct {
		name   string
		mirror *v1.Pod
		want   bool
	}{
		{"the replaced pod's mirror while that pod stops", mirror("old-hash", false), true},
		{"the replaced pod's mirror once it has terminated", mirror("gone-hash", false), false},
		{"its own mirror, deleted by a user, while it runs", mirror("new-hash", true), false},
		{"no mirror", nil, false},
	} {
		if got := keepReplacedMirror(tc.mirror, static, terminated); got != tc.want {
			t.Errorf("%s: keepReplacedMirror = %v, want %v", tc.name, got, tc.want)
		}
	}
}
