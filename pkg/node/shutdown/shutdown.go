// Package shutdown is graceful node shutdown (shutdownGracePeriod,
// shutdownGracePeriodCriticalPods), as upstream: the kubelet holds a
// systemd-logind "delay" inhibitor lock on shutdown; when logind announces
// the shutdown (PrepareForShutdown), the node turns NotReady ("node is
// shutting down"), admission refuses new pods, the pods are stopped —
// regular ones within shutdownGracePeriod - shutdownGracePeriodCriticalPods,
// critical ones after them within shutdownGracePeriodCriticalPods — Failed
// with reason Terminated, and the lock is released so the shutdown goes on.
//
// It needs systemd-logind on the system D-Bus. Where there is none (these
// development machines run no systemd), the manager says so once, in the
// log and as a Warning event on the Node, and the machine shuts down
// without waiting for the pods.
package shutdown

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// Upstream's words.
const (
	// Reason and Message of a pod stopped for the shutdown.
	Reason  = "Terminated"
	Message = "Pod was terminated in response to imminent node shutdown."
	// NotReadyMessage is the Ready condition's message while shutting down.
	NotReadyMessage = "node is shutting down"
	// AdmitMessage refuses new pods while shutting down.
	AdmitMessage = "Pod was rejected as the node is shutting down."
	// EventUnavailable is the Node event when logind cannot be used.
	EventUnavailable = "GracefulNodeShutdownUnavailable"
)

// Logind is what the manager needs of systemd-logind.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: the longest a delay
	// lock may hold a shutdown back.
	InhibitDelayMax() (time.Duration, error)
	// Inhibit takes a delay lock on shutdown; release gives it back.
	Inhibit(why string) (release func(), err error)
	// PrepareForShutdown delivers logind's PrepareForShutdown signals (true:
	// a shutdown begins; false: it was cancelled).
	PrepareForShutdown() (<-chan bool, error)
}

// Pods is the engine's side.
type Pods interface {
	ActivePods() []*v1.Pod
	// TerminatePod stops the pod for good within gracePeriod seconds,
	// Failed with reason and message, and reports when it stopped.
	TerminatePod(pod *v1.Pod, gracePeriod int64, reason, msg string) <-chan struct{}
}

// Options configure the manager.
type Options struct {
	GracePeriod             time.Duration
	GracePeriodCriticalPods time.Duration
	// Connect reaches logind (over the system D-Bus by default).
	Connect  func() (Logind, error)
	Pods     Pods
	Recorder record.EventRecorder
	NodeRef  *v1.ObjectReference
}

// Manager handles graceful node shutdown.
type Manager struct {
	o Options

	mu           sync.Mutex
	shuttingDown bool
}

// New returns a manager; it does nothing without a shutdownGracePeriod.
func New(o Options) *Manager {
	if o.Connect == nil {
		o.Connect = ConnectDBus
	}
	if o.Recorder == nil {
		o.Recorder = &record.FakeRecorder{}
	}
	return &Manager{o: o}
}

// ShuttingDown reports that a shutdown is under way.
func (m *Manager) ShuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shuttingDown
}

// Admit refuses new pods while shutting down.
func (m *Manager) Admit(*v1.Pod) (bool, string, string) {
	if m.ShuttingDown() {
		return false, Reason, AdmitMessage
	}
	return true, "", ""
}

// Start takes the inhibitor lock and waits for shutdowns until ctx ends.
// Without logind it logs why once and waits.
func (m *Manager) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("shutdown")
	if m.o.GracePeriod <= 0 {
		<-ctx.Done()
		return nil
	}
	ld, err := m.o.Connect()
	var signals <-chan bool
	if err == nil {
		signals, err = ld.PrepareForShutdown()
	}
	if err != nil {
		msg := fmt.Sprintf("Graceful node shutdown is configured (shutdownGracePeriod %s) but systemd-logind cannot be reached: %v; pods will not be stopped gracefully when the machine shuts down", m.o.GracePeriod, err)
		log.Info("Graceful node shutdown unavailable", "reason", msg)
		if m.o.NodeRef != nil {
			m.o.Recorder.Event(m.o.NodeRef, v1.EventTypeWarning, EventUnavailable, msg)
		}
		<-ctx.Done()
		return nil
	}
	if max, err := ld.InhibitDelayMax(); err == nil && max < m.o.GracePeriod {
		log.Info("systemd-logind's InhibitDelayMaxSec is shorter than shutdownGracePeriod: the shutdown will not wait that long; raise it in logind.conf",
			"inhibitDelayMax", max, "shutdownGracePeriod", m.o.GracePeriod)
	}
	release, err := ld.Inhibit("Kubelet needs time to handle node shutdown")
	if err != nil {
		log.Error(err, "Taking the shutdown inhibitor lock failed; pods will not be stopped gracefully")
		<-ctx.Done()
		return nil
	}
	log.Info("Graceful node shutdown ready", "shutdownGracePeriod", m.o.GracePeriod, "shutdownGracePeriodCriticalPods", m.o.GracePeriodCriticalPods)
	for {
		select {
		case <-ctx.Done():
			if release != nil {
				release()
			}
			return nil
		case start, ok := <-signals:
			if !ok {
				if release != nil {
					release()
				}
				return errors.New("logind's signal stream closed")
			}
			if !start {
				log.Info("Shutdown cancelled; the node is back")
				m.setShuttingDown(false)
				if release == nil {
					if release, err = ld.Inhibit("Kubelet needs time to handle node shutdown"); err != nil {
						log.Error(err, "Taking the shutdown inhibitor lock again failed")
					}
				}
				continue
			}
			log.Info("Shutdown manager detected new shutdown event")
			m.setShuttingDown(true)
			m.StopPods(ctx)
			log.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
			if release != nil {
				release()
				release = nil
			}
		}
	}
}

func (m *Manager) setShuttingDown(v bool) {
	m.mu.Lock()
	m.shuttingDown = v
	m.mu.Unlock()
}

// StopPods stops the active pods: regular pods first, within the grace
// period less the critical pods' share, then critical pods within theirs;
// each pod gets the smaller of its own grace period and the phase's.
func (m *Manager) StopPods(ctx context.Context) {
	critical := m.o.GracePeriodCriticalPods
	regular := m.o.GracePeriod - critical
	if regular < 0 {
		regular = 0
	}
	var normal, crit []*v1.Pod
	for _, p := range m.o.Pods.ActivePods() {
		if podspec.IsCritical(p) {
			crit = append(crit, p)
		} else {
			normal = append(normal, p)
		}
	}
	for _, phase := range []struct {
		pods   []*v1.Pod
		period time.Duration
	}{{normal, regular}, {crit, critical}} {
		m.stopPhase(ctx, phase.pods, phase.period)
	}
}

func (m *Manager) stopPhase(ctx context.Context, pods []*v1.Pod, period time.Duration) {
	if len(pods) == 0 {
		return
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var wg sync.WaitGroup
	for _, p := range pods {
		grace := int64(period / time.Second)
		if tg := p.Spec.TerminationGracePeriodSeconds; tg != nil && *tg < grace {
			grace = *tg
		}
		klog.FromContext(ctx).Info("Shutdown manager killing pod with gracePeriod", "pod", klog.KObj(p), "gracePeriod", grace)
		done := m.o.Pods.TerminatePod(p, grace, Reason, Message)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-done
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	t := time.NewTimer(period + 2*time.Second)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		klog.FromContext(ctx).Info("Shutdown manager pod killing time out", "gracePeriod", period)
	case <-ctx.Done():
	}
}
