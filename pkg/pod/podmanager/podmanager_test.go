package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func mk(uid, name string, ann map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "ns", Annotations: ann}}
}

func TestMirrorPodsAreKeptApart(t *testing.T) {
	m := New()
	static := mk("s", "web-node", map[string]string{"kubernetes.io/config.source": "file"})
	mirror := mk("m", "web-node", map[string]string{"kubernetes.io/config.mirror": "s", "kubernetes.io/config.source": "api"})
	m.AddOrUpdate(static, mirror, mk("b", "b", nil))
	if got := len(m.List()); got != 2 {
		t.Fatalf("desired pods = %d, want 2 (mirror excluded)", got)
	}
	if p, ok := m.MirrorOf(static); !ok || p.UID != "m" {
		t.Fatalf("mirror not found: %v", p)
	}
	// Removing an older mirror with another UID must not drop the current one.
	m.Remove(mk("old", "web-node", map[string]string{"kubernetes.io/config.mirror": "s"}))
	if _, ok := m.MirrorOf(static); !ok {
		t.Fatalf("current mirror dropped by removal of a stale one")
	}
	m.Remove(mirror, static)
	if _, ok := m.MirrorOf(static); ok || m.Has("s") {
		t.Fatalf("removal failed")
	}
	if p, ok := m.GetByFullName("ns/b"); !ok || p.UID != "b" {
		t.Fatalf("GetByFullName failed")
	}
}
