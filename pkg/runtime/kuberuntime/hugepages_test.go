package kuberuntime

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHugePageSize(t *testing.T) {
	for b, want := range map[int64]string{64 << 10: "64KB", 2 << 20: "2MB", 32 << 20: "32MB", 1 << 30: "1GB", 16 << 30: "16GB", 512: "512B"} {
		if got := HugePageSize(b); got != want {
			t.Errorf("HugePageSize(%d) = %s, want %s", b, got, want)
		}
	}
}

func TestHugepageLimits(t *testing.T) {
	sizes := []string{"2MB", "1GB"}
	for _, tc := range []struct {
		name   string
		limits v1.ResourceList
		sizes  []string
		want   string
	}{
		{"none asked: every size limited to 0", v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}, sizes, "[2MB=0 1GB=0]"},
		{"asked sizes get their limit", v1.ResourceList{"hugepages-2Mi": resource.MustParse("100Mi"), "hugepages-1Gi": resource.MustParse("2Gi")}, sizes, "[2MB=104857600 1GB=2147483648]"},
		{"a size the kernel lacks is not passed", v1.ResourceList{"hugepages-32Mi": resource.MustParse("64Mi")}, sizes, "[2MB=0 1GB=0]"},
		{"a kernel without huge pages: no limits", v1.ResourceList{"hugepages-2Mi": resource.MustParse("100Mi")}, nil, "[]"},
		{"a malformed name is ignored", v1.ResourceList{"hugepages-x": resource.MustParse("1")}, sizes, "[2MB=0 1GB=0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, l := range hugepageLimits(tc.limits, tc.sizes) {
				got = append(got, fmt.Sprintf("%s=%d", l.PageSize, l.Limit))
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("hugepageLimits = %s, want %s", s, tc.want)
			}
		})
	}
}
