package mock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Config is the mock provider's providerConfig. Every field is optional.
//
//	providerConfig:
//	  startDelay: 100ms        # created → Running (0, the default: Running when CreatePod returns)
//	  stopDelay: 50ms          # delete → gone (at most the grace period)
//	  latency: {create: 20ms, update: 0s, delete: 20ms, get: 0s, list: 0s}
//	  failureRate: {create: 0.1, update: 0, delete: 0}   # 0..1
//	  failureClass: retryable  # or invalid, terminal
//	  seed: 1                  # for the failure draws
//	  capacity: {cpu: "1000", memory: 4Ti, pods: "20000"}
//	  notReady: ""             # a message makes the node NotReady
//	  notifier: true           # false: no push notifications (polled)
//	  usage: {cpu: 100m, memory: 64Mi}   # each running container's reported use (none: no figures)
type Config struct {
	StartDelay   metav1.Duration   `json:"startDelay,omitempty"`
	StopDelay    metav1.Duration   `json:"stopDelay,omitempty"`
	Latency      Latency           `json:"latency,omitempty"`
	FailureRate  FailureRate       `json:"failureRate,omitempty"`
	FailureClass string            `json:"failureClass,omitempty"`
	Seed         int64             `json:"seed,omitempty"`
	Capacity     map[string]string `json:"capacity,omitempty"`
	NotReady     string            `json:"notReady,omitempty"`
	Notifier     *bool             `json:"notifier,omitempty"`
	// Usage is what every running container reports using (stats
	// summary, /metrics/resource, kubectl top); without it the mock
	// reports no CPU or memory figures at all rather than zeros.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is a container's configured resource use.
type Usage struct {
	// CPU in cores ("100m"): the usage rate, and the cumulative usage
	// grows at that rate from the container's start.
	CPU string `json:"cpu,omitempty"`
	// Memory working set ("64Mi").
	Memory string `json:"memory,omitempty"`
}

// Latency is added to each call of the kind (the call waits, or returns
// when its context ends).
type Latency struct {
	Create metav1.Duration `json:"create,omitempty"`
	Update metav1.Duration `json:"update,omitempty"`
	Delete metav1.Duration `json:"delete,omitempty"`
	Get    metav1.Duration `json:"get,omitempty"`
	List   metav1.Duration `json:"list,omitempty"`
}

// FailureRate is the probability (0..1) that a call of the kind fails with
// an injected error of FailureClass.
type FailureRate struct {
	Create float64 `json:"create,omitempty"`
	Update float64 `json:"update,omitempty"`
	Delete float64 `json:"delete,omitempty"`
}

// Failure classes.
const (
	ClassRetryable = "retryable"
	ClassInvalid   = "invalid"
	ClassTerminal  = "terminal"
)

// DefaultCapacity is the node's capacity unless configured: large, so a
// benchmark of 10,000 pods fits.
var DefaultCapacity = map[string]string{"cpu": "1000", "memory": "4Ti", "pods": "20000", "ephemeral-storage": "10Ti"}

// ParseConfig decodes and checks a providerConfig (nil: defaults).
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Config{}, fmt.Errorf("mock providerConfig: %w", err)
		}
	}
	for name, r := range map[string]float64{"create": c.FailureRate.Create, "update": c.FailureRate.Update, "delete": c.FailureRate.Delete} {
		if r < 0 || r > 1 {
			return Config{}, fmt.Errorf("mock providerConfig: failureRate.%s must be within 0..1, got %v", name, r)
		}
	}
	switch c.FailureClass {
	case "":
		c.FailureClass = ClassRetryable
	case ClassRetryable, ClassInvalid, ClassTerminal:
	default:
		return Config{}, fmt.Errorf("mock providerConfig: failureClass must be %s, %s or %s, got %q", ClassRetryable, ClassInvalid, ClassTerminal, c.FailureClass)
	}
	for k, v := range c.Capacity {
		if _, err := resource.ParseQuantity(v); err != nil {
			return Config{}, fmt.Errorf("mock providerConfig: capacity[%s]: %q is not a quantity", k, v)
		}
	}
	if u := c.Usage; u != nil {
		for k, v := range map[string]string{"cpu": u.CPU, "memory": u.Memory} {
			if v == "" {
				continue
			}
			if q, err := resource.ParseQuantity(v); err != nil || q.Sign() < 0 {
				return Config{}, fmt.Errorf("mock providerConfig: usage.%s: %q is not a non-negative quantity", k, v)
			}
		}
	}
	for name, d := range map[string]metav1.Duration{"startDelay": c.StartDelay, "stopDelay": c.StopDelay, "latency.create": c.Latency.Create,
		"latency.update": c.Latency.Update, "latency.delete": c.Latency.Delete, "latency.get": c.Latency.Get, "latency.list": c.Latency.List} {
		if d.Duration < 0 {
			return Config{}, fmt.Errorf("mock providerConfig: %s must not be negative", name)
		}
	}
	return c, nil
}
