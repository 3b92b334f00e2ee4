package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIdentity(t *testing.T) {
	withAnn := func(kv ...string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", Annotations: map[string]string{}}}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	tests := []struct {
		name                     string
		pod                      *v1.Pod
		static, mirror, critical bool
	}{
		{"api pod", withAnn(ConfigSourceAnnotation, SourceAPI), false, false, false},
		{"no source annotation (not taken in by a source)", withAnn(), false, false, false},
		{"file", withAnn(ConfigSourceAnnotation, SourceFile), true, false, true},
		{"url", withAnn(ConfigSourceAnnotation, SourceHTTP), true, false, true},
		{"mirror", withAnn(ConfigSourceAnnotation, SourceAPI, ConfigMirrorAnnotation, "hash"), false, true, true},
	}
	for _, tt := range tests {
		if got := IsStatic(tt.pod); got != tt.static {
			t.Errorf("%s: IsStatic = %v", tt.name, got)
		}
		if got := IsMirror(tt.pod); got != tt.mirror {
			t.Errorf("%s: IsMirror = %v", tt.name, got)
		}
		if got := IsCritical(tt.pod); got != tt.critical {
			t.Errorf("%s: IsCritical = %v", tt.name, got)
		}
	}
	p := withAnn()
	p.Spec.Priority = ptr.To(SystemCriticalPriority)
	if !IsCritical(p) {
		t.Errorf("system-critical priority not critical")
	}
	p.Spec.Priority = ptr.To(SystemCriticalPriority - 1)
	if IsCritical(p) {
		t.Errorf("priority below system-critical counted critical")
	}
	if got := FullName(p); got != "ns/web" {
		t.Errorf("FullName = %q", got)
	}
	if got := Format(p); got != "web_ns(u)" {
		t.Errorf("Format = %q", got)
	}
}

func TestFindContainer(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers:      []v1.Container{{Name: "init"}},
		Containers:          []v1.Container{{Name: "app"}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}},
	}}
	for _, tt := range []struct {
		name string
		kind Kind
	}{{"init", Init}, {"app", App}, {"debug", Ephemeral}} {
		c, kind, ok := FindContainer(pod, tt.name)
		if !ok || c.Name != tt.name || kind != tt.kind {
			t.Errorf("FindContainer(%q) = %v %v %v", tt.name, c, kind, ok)
		}
	}
	if c, _, _ := FindContainer(pod, "debug"); c.Image != "busybox" {
		t.Errorf("ephemeral container fields not carried: %+v", c)
	}
	if _, _, ok := FindContainer(pod, "nope"); ok {
		t.Errorf("found a container that does not exist")
	}
	if c := FindIn(pod.Spec.Containers, "app"); c != &pod.Spec.Containers[0] {
		t.Errorf("FindIn does not point into the list")
	}
}
