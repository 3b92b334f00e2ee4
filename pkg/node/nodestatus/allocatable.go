package nodestatus

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Eviction signals that reduce allocatable, and the resource each one
// reserves.
const (
	SignalMemoryAvailable = "memory.available"
	SignalNodeFsAvailable = "nodefs.available"
)

var signalResource = map[string]v1.ResourceName{
	SignalMemoryAvailable: v1.ResourceMemory,
	SignalNodeFsAvailable: v1.ResourceEphemeralStorage,
}

// Threshold is one hard eviction threshold: a signal and either an absolute
// quantity or a fraction (0..1) of the resource's capacity.
type Threshold struct {
	Signal   string
	Quantity *resource.Quantity
	Fraction float64
}

// ParseHardEviction parses KubeletConfiguration.evictionHard
// ({"memory.available": "100Mi", "nodefs.available": "10%"}). Signals that
// do not reduce allocatable (imagefs.*, *.inodesFree, pid.available) are
// parsed for validity and kept, so callers can pass the whole map.
func ParseHardEviction(m map[string]string) ([]Threshold, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Threshold
	for _, sig := range keys {
		val := strings.TrimSpace(m[sig])
		if strings.HasSuffix(val, "%") {
			f, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
			if err != nil || f < 0 || f > 100 || math.IsNaN(f) {
				return nil, fmt.Errorf("evictionHard[%s]: invalid percentage %q", sig, val)
			}
			out = append(out, Threshold{Signal: sig, Fraction: f / 100})
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("evictionHard[%s]: invalid quantity %q: %v", sig, val, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("evictionHard[%s]: negative quantity %q", sig, val)
		}
		out = append(out, Threshold{Signal: sig, Quantity: &q})
	}
	return out, nil
}

// ParseReservation parses kubeReserved/systemReserved
// ({"cpu": "100m", "memory": "256Mi"}) into a resource list.
func ParseReservation(field string, m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	rl := v1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: invalid quantity %q: %v", field, k, v, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s[%s]: negative quantity %q", field, k, v)
		}
		rl[v1.ResourceName(k)] = q
	}
	return rl, nil
}

// Allocatable is capacity minus kubeReserved, systemReserved and the hard
// eviction thresholds for memory.available (from memory) and
// nodefs.available (from ephemeral-storage); a percentage threshold is
// taken of that resource's capacity. Huge page pools (hugepages-<size>,
// less their own reservations) are also taken out of memory. No resource
// goes below zero.
func Allocatable(capacity, kubeReserved, systemReserved v1.ResourceList, hard []Threshold) v1.ResourceList {
	out := v1.ResourceList{}
	for name, c := range capacity {
		v := c.DeepCopy()
		if r, ok := kubeReserved[name]; ok {
			v.Sub(r)
		}
		if r, ok := systemReserved[name]; ok {
			v.Sub(r)
		}
		for _, t := range hard {
			if signalResource[t.Signal] != name {
				continue
			}
			v.Sub(thresholdAmount(t, c))
		}
		if v.Sign() < 0 {
			v = *resource.NewQuantity(0, c.Format)
		}
		out[name] = v
	}
	withoutHugePagesMemory(out, capacity)
	return out
}

func thresholdAmount(t Threshold, capacity resource.Quantity) resource.Quantity {
	if t.Quantity != nil {
		return t.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*t.Fraction), resource.BinarySI)
}
