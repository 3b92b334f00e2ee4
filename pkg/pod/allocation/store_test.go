package allocation

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// The checkpoint is assembled from per-pod encodings kept between writes;
// after every kind of change the file must be exactly what json.Marshal
// makes of the whole store, and read back to the same resources.
func TestStoreFileIsTheWholeStoreAfterEveryChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "alloc.json")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	req := func(cpu string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}
	}
	check := func(step string) {
		t.Helper()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want, err := json.Marshal(checkpoint{Pods: s.pods})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: file\n%s\nwant\n%s", step, got, want)
		}
		back, err := OpenStore(path)
		if err != nil {
			t.Fatalf("%s: reopen: %v", step, err)
		}
		if again, _ := json.Marshal(checkpoint{Pods: back.pods}); !bytes.Equal(again, want) {
			t.Fatalf("%s: reopened store\n%s\nwant\n%s", step, again, want)
		}
	}
	if err := s.SetPod("b", map[string]v1.ResourceRequirements{"c": req("100m")}); err != nil {
		t.Fatal(err)
	}
	check("first pod")
	if err := s.SetPod("a\"<", map[string]v1.ResourceRequirements{"x": req("1"), "y": {}}); err != nil {
		t.Fatal(err)
	}
	check("second pod, a key to escape")
	if err := s.Set("b", "c", req("250m")); err != nil {
		t.Fatal(err)
	}
	check("one container changed")
	if err := s.Set("b", "d", req("2")); err != nil {
		t.Fatal(err)
	}
	check("one container added")
	if err := s.RemoveOrphans(func(uid types.UID) bool { return uid == "b" }); err != nil {
		t.Fatal(err)
	}
	check("a pod removed")
	if err := s.RemoveOrphans(func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	check("every pod removed")
}
