package cgroups

import (
	"time"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// instrumented times a driver's writes for
// kubelet_cgroup_manager_duration_seconds under upstream's operation
// names: Ensure is create, Set is update, Remove is destroy. Failed
// operations are timed too, as upstream's.
type instrumented struct{ Driver }

// Instrumented wraps d so that its writes are timed.
func Instrumented(d Driver) Driver { return instrumented{d} }

func (d instrumented) Ensure(n Name, r *Resources) error {
	defer observe("create", time.Now())
	return d.Driver.Ensure(n, r)
}

func (d instrumented) Set(n Name, r *Resources) error {
	defer observe("update", time.Now())
	return d.Driver.Set(n, r)
}

func (d instrumented) Remove(n Name) error {
	defer observe("destroy", time.Now())
	return d.Driver.Remove(n)
}

func observe(op string, start time.Time) {
	metrics.CgroupManagerDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}
