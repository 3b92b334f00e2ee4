package pleg

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/gokubelet/kubelet/pkg/metrics"
	"github.com/gokubelet/kubelet/pkg/runtime/container"
)

// EventSource is a runtime that streams container events (CRI
// GetContainerEvents; containerd 1.7 and 2 do, 1.6 does not).
// WatchContainerEvents calls connected once the stream is up and event for
// each event, until the stream ends or ctx does.
type EventSource interface {
	WatchContainerEvents(ctx context.Context, connected func(), event func(*runtimeapi.ContainerEventResponse)) error
}

// The event stream only makes the PLEG relist sooner: the relist stays the
// one source of truth and the safety net, so what the stream gets wrong
// cannot mislead the kubelet. A duplicated event costs at most a relist
// that finds nothing new; a reordered one, too; a lost one, or a gap while
// the stream reconnects or the runtime restarts, is found by the relist made
// on every (re)connection and by the periodic one, which runs every
// streamPeriod while the stream is followed and every period otherwise.
//
// An event makes the PLEG relist only when it is news: the PLEG's record
// does not show it yet (isNews). The kubelet learns of what it created,
// started, stopped and removed itself from the status it reads right after
// acting (Observe), so relisting on its own events would cost CPU during
// every batch of pod starts and deletions for nothing. An event about a pod
// the kubelet is acting on is judged when the action ends, against the
// record the kubelet's read left (Acting): news then is a change it did not
// make, such as a container that crashed meanwhile.

// isNews reports whether a container event says something the record of
// its pod (the containers and sandboxes of rec, which may be nil) does not
// show yet: a container or sandbox that ended, appeared or started, or was
// removed.
func isNews(e *runtimeapi.ContainerEventResponse, rec *container.PodStatus) bool {
	id := e.GetContainerId()
	known, ended, running := false, false, false
	if rec != nil {
		for _, c := range rec.Containers {
			if c.ID == id {
				known, ended, running = true, c.State == container.StateExited, c.State == container.StateRunning
			}
		}
		for _, sb := range rec.Sandboxes {
			if sb.ID == id {
				known, ended, running = true, sb.State == container.SandboxNotReady, sb.State == container.SandboxReady
			}
		}
	}
	switch e.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		return !ended
	case runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
		return !known
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		return !running && !ended
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		return known
	}
	return false
}

// eventKickGap is the least time between two relists the stream asks for:
// a burst of exits (a node-wide OOM, a runtime restart) is read by a few
// relists, not one per exit.
const eventKickGap = 100 * time.Millisecond

// onEvent makes the PLEG relist at once for an event that is news, or keeps
// it, when the kubelet is acting on its pod, for the end of that action.
func (p *PLEG) onEvent(e *runtimeapi.ContainerEventResponse) {
	p.observeEvent(e)
	p.mu.Lock()
	uid := p.podOf(e)
	if p.acting[uid] > 0 {
		p.pending[uid] = append(p.pending[uid], e)
		p.mu.Unlock()
		return
	}
	news := isNews(e, p.last[uid])
	p.mu.Unlock()
	if news {
		p.kick()
	}
}

// podOf is the pod an event is about: the one it names, else the one whose
// record holds its container or sandbox ("" if none). p.mu is held.
func (p *PLEG) podOf(e *runtimeapi.ContainerEventResponse) types.UID {
	if uid := types.UID(e.GetPodSandboxStatus().GetMetadata().GetUid()); uid != "" {
		return uid
	}
	id := e.GetContainerId()
	for uid, s := range p.last {
		for _, c := range s.Containers {
			if c.ID == id {
				return uid
			}
		}
		for _, sb := range s.Sandboxes {
			if sb.ID == id {
				return uid
			}
		}
	}
	return ""
}

// Stream reconnection back-off.
const (
	streamRetryMin = time.Second
	streamRetryMax = 30 * time.Second
)

// kick asks the relist loop to relist now (coalesced: one pending kick).
func (p *PLEG) kick() {
	select {
	case p.kicks <- struct{}{}:
	default:
	}
}

// WatchEvents follows src's event stream until ctx ends, reconnecting with
// back-off when it breaks. A runtime that has no stream (Unimplemented)
// leaves the PLEG relisting alone, which is logged once.
func (p *PLEG) WatchEvents(ctx context.Context, src EventSource) error {
	logger := klog.FromContext(ctx)
	retry := streamRetryMin
	for {
		up := time.Time{}
		err := src.WatchContainerEvents(ctx,
			func() {
				metrics.EventedPLEGConn.Inc()
				up = p.clock.Now()
				p.streaming.Store(true)
				logger.V(2).Info("Following the runtime's container event stream")
				// Whatever happened while there was no stream.
				p.kick()
			},
			p.onEvent)
		if p.streaming.Swap(false) {
			// Back to the relist alone: whatever the stream did not
			// tell, and the period of a PLEG without a stream.
			p.kick()
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			metrics.EventedPLEGConnErr.Inc()
		}
		if grpcstatus.Code(err) == codes.Unimplemented {
			logger.Info("The container runtime streams no container events; the PLEG relists alone", "period", p.period)
			return nil
		}
		if !up.IsZero() && p.clock.Since(up) > streamRetryMax {
			retry = streamRetryMin
		}
		logger.Error(err, "Container event stream ended; relisting, and reconnecting", "retryIn", retry)
		p.kick()
		select {
		case <-ctx.Done():
			return nil
		case <-p.clock.After(retry):
		}
		retry = min(2*retry, streamRetryMax)
	}
}

// Streaming reports whether the runtime's event stream is being followed.
func (p *PLEG) Streaming() bool { return p.streaming.Load() }
