package volume

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestDownwardAPIFieldsResourcesAndLabelUpdates(t *testing.T) {
	e := newEnv(t)
	v := vol("d", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: ptr.To[int32](0o400)},
		{Path: "meta/annotation", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['a']"}},
		{Path: "cpu_limit", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "memory_request", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}},
	}}})
	p := pod("u1", v)
	p.Labels = map[string]string{"k1": "v1"}
	p.Annotations = map[string]string{"a": "x"}
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}
	e.setUp(p)
	dir := e.volDir(p, dirDownwardAPI, "d")
	for f, want := range map[string]string{"podname": "p-u1", "labels": `k1="v1"`, "meta/annotation": "x", "cpu_limit": "4000", "memory_request": "32"} {
		if got := read(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if !isTmpfs(t, dir) {
		t.Error("downwardAPI volume not on tmpfs")
	}
	if m := mode(t, filepath.Join(dir, "labels")); m.Perm() != 0o400 {
		t.Errorf("item mode %v", m)
	}
	// The pod's labels change: the next set-up shows them.
	p2 := p.DeepCopy()
	p2.Labels["k2"] = "v2"
	e.setUp(p2)
	if got := read(t, filepath.Join(dir, "labels")); got != "k1=\"v1\"\nk2=\"v2\"" {
		t.Errorf("labels after update %q", got)
	}
	// A bad field path fails the volume with the path named.
	bad := vol("bad", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "x", FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}})
	if err := e.m.SetUpPod(context.Background(), pod("u2", bad)); err == nil || !strings.Contains(err.Error(), "spec.nodeName") {
		t.Errorf("bad field: %v", err)
	}
}
