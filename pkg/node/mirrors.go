package node

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/gokubelet/kubelet/pkg/node/mirrorpod"
	"github.com/gokubelet/kubelet/pkg/pod/podspec"
)

// mirrorResync is how often mirror pods are reconciled without a trigger.
const mirrorResync = 10 * time.Second

// mirrorLoop keeps one mirror pod per running static pod in the API
// server, and none for static pods that are gone. API calls happen here,
// never in an engine's loop.
type mirrorLoop struct {
	core    *Core
	client  *mirrorpod.Manager
	apiNode func() *v1.Node
	// registered is closed once the Node is registered: mirror pods wait
	// for their owner.
	registered <-chan struct{}
	// kick (capacity 1) asks for a reconcile now.
	kick chan struct{}
}

func newMirrorLoop(c *Core, client *mirrorpod.Manager, apiNode func() *v1.Node, registered <-chan struct{}) *mirrorLoop {
	return &mirrorLoop{core: c, client: client, apiNode: apiNode, registered: registered, kick: make(chan struct{}, 1)}
}

func (l *mirrorLoop) trigger() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Start reconciles on every trigger, when the Node gets registered, and
// every mirrorResync until ctx ends.
func (l *mirrorLoop) Start(ctx context.Context) error {
	t := l.core.clock.NewTicker(mirrorResync)
	defer t.Stop()
	registered := l.registered
	for {
		l.reconcile(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-l.kick:
		case <-registered:
			registered = nil // once
		}
	}
}

// reconcile creates the mirror pods static pods lack, replaces outdated
// ones and deletes those whose static pod is gone. A mirror pod is only
// created once the Node is registered (it is owned by the Node).
func (l *mirrorLoop) reconcile(ctx context.Context) {
	log := klog.FromContext(ctx)
	c := l.core
	node := l.apiNode()
	wanted := map[string]bool{}
	for _, p := range c.pods.List() {
		if !podspec.IsStatic(p) || !c.lifecycle.RunsStaticPod(p.UID) {
			continue
		}
		wanted[podspec.FullName(p)] = true
		mirror, _ := c.pods.MirrorOf(p)
		create, del := mirrorpod.Needs(p, mirror)
		if del && keepReplacedMirror(mirror, p, c.lifecycle.PodTerminated) {
			// The static pod was replaced (its manifest changed) and the
			// pod it replaced still stops: its mirror stays until then;
			// the new pod starts only after it, too (podworkers).
			continue
		}
		if del {
			uid := mirror.UID
			if _, err := l.client.DeleteMirror(ctx, podspec.FullName(mirror), &uid); err != nil {
				log.Error(err, "Deleting an outdated mirror pod", "pod", klog.KObj(mirror))
				continue
			}
		}
		if create && node != nil {
			if err := l.client.CreateMirror(ctx, p, node); err != nil && !errors.Is(err, mirrorpod.ErrNodeDeleting) {
				log.Error(err, "Creating mirror pod", "pod", klog.KObj(p))
				c.recorder.Eventf(p, v1.EventTypeWarning, "FailedCreateMirrorPod", "creating mirror pod: %v", err)
			}
		}
	}
	for _, m := range c.pods.Mirrors() {
		if wanted[podspec.FullName(m)] || !staleMirrorGoes(m, c.lifecycle.PodTerminated) {
			continue
		}
		uid := m.UID
		if _, err := l.client.DeleteMirror(ctx, podspec.FullName(m), &uid); err != nil {
			log.Error(err, "Deleting an orphaned mirror pod", "pod", klog.KObj(m))
		}
	}
}

// staleMirrorGoes decides whether a mirror pod that no running static pod
// wants (its static pod left its source, or was replaced by a changed
// manifest) is deleted now. It stays while the static pod it mirrors
// (config.mirror names its UID) is still stopping: as with upstream, the API
// shows that pod running through its grace period, and the mirror goes once
// the pod has terminated (the engine then triggers a reconcile).
// Otherwise it goes at once, also when a graceful deletion was started by
// someone else (the garbage collector after the Node was recreated, a
// user): only the node finishes a pod's deletion, and a mirror runs nothing
// to wait for, so it would stay Terminating, and never Ready, for good. One
// already deleted with grace period 0 needs nothing more.
func staleMirrorGoes(m *v1.Pod, terminated func(types.UID) bool) bool {
	if m.DeletionTimestamp != nil && ptr.Deref(m.DeletionGracePeriodSeconds, 1) == 0 {
		return false
	}
	if uid := m.Annotations[podspec.ConfigMirrorAnnotation]; uid != "" && !terminated(types.UID(uid)) {
		return false
	}
	return true
}

// keepReplacedMirror decides whether the mirror pod found under a running
// static pod's name stays for now although it needs replacing: only when
// it mirrors another static pod (one its manifest replaced) that is still
// stopping. The pod's own mirror, deleted by someone or outdated, is
// replaced at once.
func keepReplacedMirror(mirror, static *v1.Pod, terminated func(types.UID) bool) bool {
	return mirror != nil && !mirrorpod.IsMirrorOf(mirror, static) && !staleMirrorGoes(mirror, terminated)
}
