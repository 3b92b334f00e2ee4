package nodestatus

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gokubelet/kubelet/pkg/node/machineinfo"
)

// HugePagesResource is the resource name of a huge page size
// ("hugepages-2Mi" for 2 MiB pages), as the API spells it.
func HugePagesResource(pageSizeBytes int64) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(pageSizeBytes, resource.BinarySI).String())
}

// hugePagesCapacity adds one hugepages-<size> resource per page size the
// kernel supports to c, worth the pool's bytes; an empty pool is 0, so the
// scheduler knows the size exists (as upstream reports it).
func hugePagesCapacity(c v1.ResourceList, pools []machineinfo.HugePages) {
	for _, p := range pools {
		c[HugePagesResource(p.PageSizeBytes)] = *resource.NewQuantity(p.PageSizeBytes*p.Pages, resource.BinarySI)
	}
}

// isHugePages reports whether name is a hugepages-<size> resource.
func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// withoutHugePagesMemory takes every huge page pool of capacity out of
// allocatable memory (the pools are memory pods cannot use as ordinary
// memory), never below zero, as upstream does.
func withoutHugePagesMemory(allocatable, capacity v1.ResourceList) {
	mem, ok := allocatable[v1.ResourceMemory]
	if !ok {
		return
	}
	for name, q := range capacity {
		if isHugePages(name) {
			mem.Sub(q)
		}
	}
	if mem.Sign() < 0 {
		mem = *resource.NewQuantity(0, mem.Format)
	}
	allocatable[v1.ResourceMemory] = mem
}
