package pleg

import (
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// instrumentRelist observes the interval since the last successful relist
// and returns what to call when the relist ends: it observes the relist's
// duration and, after a success, the last-seen time.
func (p *PLEG) instrumentRelist() func() {
	start := p.clock.Now()
	p.mu.Lock()
	last := p.lastRelist
	p.mu.Unlock()
	if !last.IsZero() {
		metrics.PLEGRelistInterval.Observe(start.Sub(last).Seconds())
	}
	return func() {
		metrics.PLEGRelistDuration.Observe(p.clock.Since(start).Seconds())
		p.mu.Lock()
		seen, failed := p.lastRelist, p.lastErr != nil
		p.mu.Unlock()
		if !failed && !seen.Before(start) {
			metrics.PLEGLastSeen.Set(float64(seen.Unix()))
		}
	}
}

// eventLatency is how long an event of the runtime's stream took from its
// creation to now (ok false when the runtime did not stamp it). A runtime
// clock ahead of the kubelet's counts as no delay.
func eventLatency(now time.Time, e *runtimeapi.ContainerEventResponse) (time.Duration, bool) {
	if e.GetCreatedAt() <= 0 {
		return 0, false
	}
	return max(0, now.Sub(time.Unix(0, e.GetCreatedAt()))), true
}

// observeEvent records the stream's latency for one event.
func (p *PLEG) observeEvent(e *runtimeapi.ContainerEventResponse) {
	if d, ok := eventLatency(p.clock.Now(), e); ok {
		metrics.EventedPLEGConnLatency.Observe(d.Seconds())
	}
}
