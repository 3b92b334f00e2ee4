package pleg

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

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
// cannot mislead the kubelet. A duplicated event costs a relist that finds
// nothing new; a reordered one, too; a lost one, or a gap while the stream
// reconnects or the runtime restarts, is found by the relist made on every
// (re)connection and by the periodic one.
//
// Only exits make it relist (STOPPED: a container or a sandbox ended), and
// only those it has not seen yet: the kubelet learns of what it created,
// started, stopped and removed itself from the status it reads right after
// acting (Observe), so relisting on those events would cost CPU during
// every batch of pod starts and deletions for nothing. A container someone
// else creates or removes waits for the periodic relist, as before. (An
// event is used only to skip a relist that would find nothing; a wrong
// one costs at most the period.)

// wantsRelist reports whether an event makes the PLEG relist at once.
func wantsRelist(e *runtimeapi.ContainerEventResponse) bool {
	return e.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT
}

// eventKickGap is the least time between two relists the stream asks for:
// a burst of exits (a node-wide OOM, a runtime restart) is read by a few
// relists, not one per exit.
const eventKickGap = 100 * time.Millisecond

// knownEnded reports whether the PLEG has already seen the container or
// sandbox of an exit event ended.
func (p *PLEG) knownEnded(e *runtimeapi.ContainerEventResponse) bool {
	uid := types.UID(e.GetPodSandboxStatus().GetMetadata().GetUid())
	id := e.GetContainerId()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.last[uid]
	if s == nil {
		return false
	}
	for _, c := range s.Containers {
		if c.ID == id {
			return c.State == container.StateExited
		}
	}
	for _, sb := range s.Sandboxes {
		if sb.ID == id {
			return sb.State == container.SandboxNotReady
		}
	}
	return false
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
				up = p.clock.Now()
				p.streaming.Store(true)
				logger.V(2).Info("Following the runtime's container event stream")
				// Whatever happened while there was no stream.
				p.kick()
			},
			func(e *runtimeapi.ContainerEventResponse) {
				if wantsRelist(e) && !p.knownEnded(e) {
					p.kick()
				}
			})
		p.streaming.Store(false)
		if ctx.Err() != nil {
			return nil
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
