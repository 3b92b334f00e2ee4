package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal names an observed quantity of the node.
type Signal string

// The signals, as upstream names them in evictionHard and friends.
// allocatableMemory.available is not configured directly: it is derived
// from memory.available's hard threshold when enforceNodeAllocatable has
// "pods", and measures the pods' cgroup against node allocatable.
const (
	MemoryAvailable            Signal = "memory.available"
	AllocatableMemoryAvailable Signal = "allocatableMemory.available"
	NodeFsAvailable            Signal = "nodefs.available"
	NodeFsInodesFree           Signal = "nodefs.inodesFree"
	ImageFsAvailable           Signal = "imagefs.available"
	ImageFsInodesFree          Signal = "imagefs.inodesFree"
	// containerfs is the filesystem of the containers' writable layers:
	// the image filesystem here (no split image/container filesystems).
	ContainerFsAvailable  Signal = "containerfs.available"
	ContainerFsInodesFree Signal = "containerfs.inodesFree"
	PIDAvailable          Signal = "pid.available"
)

// Resources a signal's pressure is about, besides the v1 names.
const (
	ResourceInodes v1.ResourceName = "inodes"
	ResourcePIDs   v1.ResourceName = "pids"
)

var signalResource = map[Signal]v1.ResourceName{
	MemoryAvailable:            v1.ResourceMemory,
	AllocatableMemoryAvailable: v1.ResourceMemory,
	NodeFsAvailable:            v1.ResourceEphemeralStorage,
	NodeFsInodesFree:           ResourceInodes,
	ImageFsAvailable:           v1.ResourceEphemeralStorage,
	ImageFsInodesFree:          ResourceInodes,
	ContainerFsAvailable:       v1.ResourceEphemeralStorage,
	ContainerFsInodesFree:      ResourceInodes,
	PIDAvailable:               ResourcePIDs,
}

var signalCondition = map[Signal]v1.NodeConditionType{
	MemoryAvailable:            v1.NodeMemoryPressure,
	AllocatableMemoryAvailable: v1.NodeMemoryPressure,
	NodeFsAvailable:            v1.NodeDiskPressure,
	NodeFsInodesFree:           v1.NodeDiskPressure,
	ImageFsAvailable:           v1.NodeDiskPressure,
	ImageFsInodesFree:          v1.NodeDiskPressure,
	ContainerFsAvailable:       v1.NodeDiskPressure,
	ContainerFsInodesFree:      v1.NodeDiskPressure,
	PIDAvailable:               v1.NodePIDPressure,
}

// Resource is what the signal's pressure starves.
func (s Signal) Resource() v1.ResourceName { return signalResource[s] }

// Condition is the node condition the signal's pressure raises.
func (s Signal) Condition() v1.NodeConditionType { return signalCondition[s] }

// configurable are the signals the configuration may name.
var configurable = []Signal{MemoryAvailable, AllocatableMemoryAvailable, NodeFsAvailable, NodeFsInodesFree,
	ImageFsAvailable, ImageFsInodesFree, ContainerFsAvailable, ContainerFsInodesFree, PIDAvailable}

func validSignal(s string) bool {
	for _, c := range configurable {
		if string(c) == s {
			return true
		}
	}
	return false
}

// Value is a threshold's amount: a quantity, or a fraction of capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Amount is the value in the signal's unit for a capacity.
func (v Value) Amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * v.Percentage)
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is one eviction threshold: the signal is met when its
// available amount falls below Value. A soft threshold (GracePeriod > 0)
// must be met for its whole grace period before pods are evicted; once
// met, a threshold stays met until MinReclaim more than Value is available.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	MinReclaim  *Value
}

// Hard reports a threshold without grace period: pods are evicted at once,
// with a 1s termination grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

func (t Threshold) String() string {
	s := fmt.Sprintf("%s<%s", t.Signal, t.Value)
	if !t.Hard() {
		s += fmt.Sprintf(" for %s", t.GracePeriod)
	}
	return s
}

// key identifies a threshold across synchronizations.
func (t Threshold) key() string {
	return fmt.Sprintf("%s|%s|%s", t.Signal, t.Value, t.GracePeriod)
}

// Config is the eviction configuration of KubeletConfiguration.
type Config struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim map[string]string
	// EnforceNodeAllocatable: with "pods", memory.available's hard
	// threshold also applies to the pods' cgroup against allocatable.
	EnforceNodeAllocatable []string
}

// Parse turns the configuration into thresholds (sorted by signal, hard
// before soft), as upstream: "0%" and "100%" turn a threshold off, every
// soft threshold needs a grace period, minimum reclaims apply to every
// threshold of their signal.
func Parse(c Config) ([]Threshold, error) {
	hard, err := parseStatements("evictionHard", c.Hard)
	if err != nil {
		return nil, err
	}
	soft, err := parseStatements("evictionSoft", c.Soft)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		g, ok := c.SoftGracePeriod[string(soft[i].Signal)]
		if !ok {
			return nil, fmt.Errorf("evictionSoftGracePeriod[%s]: a grace period is required for every soft eviction threshold", soft[i].Signal)
		}
		d, err := time.ParseDuration(g)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("evictionSoftGracePeriod[%s]: invalid duration %q", soft[i].Signal, g)
		}
		soft[i].GracePeriod = d
	}
	for sig := range c.SoftGracePeriod {
		if !validSignal(sig) {
			return nil, fmt.Errorf("evictionSoftGracePeriod[%s]: unsupported eviction signal", sig)
		}
	}
	out := append(hard, soft...)
	for _, sig := range sortedKeys(c.MinimumReclaim) {
		if !validSignal(sig) {
			return nil, fmt.Errorf("evictionMinimumReclaim[%s]: unsupported eviction signal", sig)
		}
		v, err := parseValue(c.MinimumReclaim[sig])
		if err != nil {
			return nil, fmt.Errorf("evictionMinimumReclaim[%s]: %v", sig, err)
		}
		if v == nil {
			continue
		}
		for i := range out {
			if string(out[i].Signal) == sig {
				mr := *v
				out[i].MinReclaim = &mr
			}
		}
	}
	for _, e := range c.EnforceNodeAllocatable {
		if e != "pods" {
			continue
		}
		for _, t := range hard {
			if t.Signal == MemoryAvailable {
				a := t
				a.Signal = AllocatableMemoryAvailable
				for _, o := range out {
					if o.Signal == MemoryAvailable && o.Hard() {
						a.MinReclaim = o.MinReclaim
					}
				}
				out = append(out, a)
			}
		}
	}
	return out, nil
}

func parseStatements(field string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, sig := range sortedKeys(m) {
		if !validSignal(sig) {
			return nil, fmt.Errorf("%s[%s]: unsupported eviction signal", field, sig)
		}
		val := strings.TrimSpace(m[sig])
		if val == "0%" || val == "100%" {
			continue
		}
		v, err := parseValue(val)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %v", field, sig, err)
		}
		if v.Quantity != nil && v.Quantity.Sign() <= 0 {
			return nil, fmt.Errorf("%s[%s]: threshold must be positive: %s", field, sig, val)
		}
		out = append(out, Threshold{Signal: Signal(sig), Value: *v})
	}
	return out, nil
}

func parseValue(val string) (*Value, error) {
	val = strings.TrimSpace(val)
	if strings.HasSuffix(val, "%") {
		f, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
		if err != nil || f < 0 || f > 100 {
			return nil, fmt.Errorf("invalid percentage %q", val)
		}
		return &Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("invalid quantity %q: %v", val, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("negative quantity %q", val)
	}
	return &Value{Quantity: &q}, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
