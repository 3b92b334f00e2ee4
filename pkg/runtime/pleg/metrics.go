package pleg

import "github.com/gokubelet/kubelet/pkg/metrics"

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
