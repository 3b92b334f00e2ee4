package kuberuntime

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// hugePageSizes are the kernel's huge page sizes in the CRI's spelling
// ("2MB", "1GB"), read once from /sys/kernel/mm/hugepages; none when the
// kernel has no huge pages.
var hugePageSizes = sync.OnceValue(func() []string {
	entries, err := os.ReadDir("/sys/kernel/mm/hugepages")
	if err != nil {
		return nil
	}
	var sizes []int64
	for _, e := range entries {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB"), 10, 64)
		if err == nil && kb > 0 {
			sizes = append(sizes, kb*1024)
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	out := make([]string, 0, len(sizes))
	for _, s := range sizes {
		out = append(out, HugePageSize(s))
	}
	return out
})

// HugePageSize spells a huge page size in bytes as the CRI (and the
// kernel's hugetlb controller files) do: binary units named KB, MB, GB
// (2 MiB is "2MB", 1 GiB "1GB").
func HugePageSize(bytes int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	v, i := float64(bytes), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + units[i]
}

// hugepageLimits are a container's hugetlb limits, as upstream sets them:
// one per page size the kernel supports, 0 unless the container's limits
// give hugepages-<size>, so a container uses no huge pages it did not ask
// for.
func hugepageLimits(limits v1.ResourceList, sizes []string) []*runtimeapi.HugepageLimit {
	if len(sizes) == 0 {
		return nil
	}
	want := map[string]uint64{}
	for name, q := range limits {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resource.ParseQuantity(size)
		if err != nil || pageSize.Value() <= 0 || q.Value() < 0 {
			continue // the API server refuses such names and amounts
		}
		want[HugePageSize(pageSize.Value())] = uint64(q.Value())
	}
	out := make([]*runtimeapi.HugepageLimit, 0, len(sizes))
	for _, s := range sizes {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: s, Limit: want[s]})
	}
	return out
}
