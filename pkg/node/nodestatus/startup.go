package nodestatus

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// Startup times the node's start for upstream's kubelet_node_startup_*
// gauges: from the host's boot to the kubelet's start, to the first
// registration attempt, to the Node's creation and to its first Ready
// status. Only a start that creates the Node is timed (a restarted kubelet
// that finds its Node registered sets nothing), as upstream. One process
// has one: the real node's controller gets it, virtual nodes none.
type Startup struct {
	// Boot is when the host booted (zero when unknown: the pre-kubelet
	// and total durations are then not set).
	Boot time.Time
	// KubeletStart is when the kubelet started.
	KubeletStart time.Time

	mu                          sync.Mutex
	attempted, registered, done time.Time
}

// startupPhases are the gauges' values. HasRegistration: the Node was
// created (the registration phases are known); HasPreKubelet: the boot
// time is known; HasReady: the Node was reported Ready since (Total needs
// HasPreKubelet too).
type startupPhases struct {
	PreKubelet, PreRegistration, Registration, PostRegistration, Total time.Duration
	HasPreKubelet, HasRegistration, HasReady                           bool
}

// startupDurations computes the phases from the recorded times.
func startupDurations(boot, start, attempted, registered, ready time.Time) startupPhases {
	var d startupPhases
	if attempted.IsZero() || registered.IsZero() {
		return d
	}
	d.HasRegistration = true
	d.PreRegistration = attempted.Sub(start)
	d.Registration = registered.Sub(attempted)
	if !boot.IsZero() {
		d.HasPreKubelet = true
		d.PreKubelet = start.Sub(boot)
	}
	if !ready.IsZero() {
		d.HasReady = true
		d.PostRegistration = ready.Sub(registered)
		if !boot.IsZero() {
			d.Total = ready.Sub(boot)
		}
	}
	return d
}

// attempt records the first registration attempt.
func (s *Startup) attempt(now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attempted.IsZero() {
		s.attempted = now
	}
}

// created records the Node's creation by this kubelet (the first one
// only) and sets the registration gauges.
func (s *Startup) created(now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attempted.IsZero() || !s.registered.IsZero() {
		return
	}
	s.registered = now
	s.publish()
}

// reported records a status written to the API: the first Ready one after
// the Node's creation sets the remaining gauges.
func (s *Startup) reported(node *v1.Node, now time.Time) {
	if s == nil || !IsReady(node) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.registered.IsZero() || !s.done.IsZero() {
		return
	}
	s.done = now
	s.publish()
}

// publish sets the gauges of the phases reached. s.mu is held.
func (s *Startup) publish() {
	d := startupDurations(s.Boot, s.KubeletStart, s.attempted, s.registered, s.done)
	if !d.HasRegistration {
		return
	}
	if d.HasPreKubelet {
		metrics.NodeStartupPreKubeletDuration.Set(d.PreKubelet.Seconds())
	}
	metrics.NodeStartupPreRegistrationDuration.Set(d.PreRegistration.Seconds())
	metrics.NodeStartupRegistrationDuration.Set(d.Registration.Seconds())
	if d.HasReady {
		metrics.NodeStartupPostRegistrationDuration.Set(d.PostRegistration.Seconds())
		if d.HasPreKubelet {
			metrics.NodeStartupDuration.Set(d.Total.Seconds())
		}
	}
}
