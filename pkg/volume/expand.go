package volume

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
)

// Online expansion of mounted CSI volumes: every ExpansionCheckPeriod (and
// once after a CSI claim volume is first set up) each such volume's claim
// and PersistentVolume are read, decideExpansion (expansion.go) says what
// to do, and this file does it: the claim status writes, NodeExpandVolume,
// the events and log lines. Upstream reads the claims on each pod sync
// (its syncFrequency) and expands from its volume manager's reconciler.

// expansionState is what the node knows of one pod volume's expansion
// (upstream keeps it in its actual state of the world).
type expansionState struct {
	// nodeSize is the size the node has the filesystem at (zero: not
	// known yet).
	nodeSize     resource.Quantity
	inUseRefused bool
	failedFinal  bool
	// count is the number of expansions done (the volume's usage is
	// measured again after each).
	count int
	// reported is the last problem written as an event, so a volume that
	// keeps failing the same way is reported once.
	reported string
}

// expandCandidate is a set-up CSI claim volume of a pod.
type expandCandidate struct {
	pod    *v1.Pod
	volume string
	claim  string
	ro     bool
	csi    csiClaim
}

func (m *Manager) expansionState(uid types.UID, volume string) *expansionState {
	m.expMu.Lock()
	defer m.expMu.Unlock()
	if m.expansions[uid] == nil {
		m.expansions[uid] = map[string]*expansionState{}
	}
	st := m.expansions[uid][volume]
	if st == nil {
		st = &expansionState{}
		m.expansions[uid][volume] = st
	}
	return st
}

// expansionCount is how many times the pod's volume was expanded.
func (m *Manager) expansionCount(uid types.UID, volume string) int {
	m.expMu.Lock()
	defer m.expMu.Unlock()
	if st := m.expansions[uid][volume]; st != nil {
		return st.count
	}
	return 0
}

func (m *Manager) forgetExpansions(uid types.UID) {
	m.expMu.Lock()
	defer m.expMu.Unlock()
	delete(m.expansions, uid)
	delete(m.expandSoon, uid)
}

// kickExpansion asks for an expansion check of the pod's volume soon.
func (m *Manager) kickExpansion(uid types.UID, volume string) {
	m.expMu.Lock()
	if m.expandSoon[uid] == nil {
		m.expandSoon[uid] = map[string]bool{}
	}
	m.expandSoon[uid][volume] = true
	m.expMu.Unlock()
	select {
	case m.expandKick <- struct{}{}:
	default:
	}
}

// expansionLoop checks every CSI claim volume for expansion every period,
// and those just set up when kicked, until ctx ends.
func (m *Manager) expansionLoop(ctx context.Context) {
	tick := m.opts.Clock.NewTicker(m.opts.ExpansionCheckPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			m.CheckExpansions(ctx)
		case <-m.expandKick:
			m.expMu.Lock()
			soon := m.expandSoon
			m.expandSoon = map[types.UID]map[string]bool{}
			m.expMu.Unlock()
			m.checkExpansions(ctx, func(c expandCandidate) bool { return soon[c.pod.UID][c.volume] })
		}
	}
}

// expandCandidates lists the set-up CSI claim volumes of the pods.
func (m *Manager) expandCandidates() []expandCandidate {
	m.mu.Lock()
	pods := make([]*podVolumes, 0, len(m.pods))
	for _, pv := range m.pods {
		pods = append(pods, pv)
	}
	m.mu.Unlock()
	var out []expandCandidate
	for _, pv := range pods {
		pv.mu.Lock()
		if !pv.gone && pv.pod != nil {
			for name, vs := range pv.vols {
				if c, ok := vs.src.(*claim); ok && vs.ready && c.csi != nil {
					out = append(out, expandCandidate{pod: pv.pod, volume: name, claim: c.name, ro: c.ro, csi: *c.csi})
				}
			}
		}
		pv.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pod.UID != out[j].pod.UID {
			return out[i].pod.UID < out[j].pod.UID
		}
		return out[i].volume < out[j].volume
	})
	return out
}

// CheckExpansions grows the filesystems of mounted CSI volumes whose
// PersistentVolume grew, as upstream's node expansion does.
func (m *Manager) CheckExpansions(ctx context.Context) {
	m.checkExpansions(ctx, func(expandCandidate) bool { return true })
}

func (m *Manager) checkExpansions(ctx context.Context, which func(expandCandidate) bool) {
	if m.csi == nil || m.opts.Claims == nil {
		return
	}
	for _, c := range m.expandCandidates() {
		if ctx.Err() != nil {
			return
		}
		if which(c) {
			m.checkExpansion(ctx, c)
		}
	}
}

func (m *Manager) checkExpansion(ctx context.Context, c expandCandidate) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(c.pod), "volume", c.volume, "claim", c.claim, "persistentVolume", c.csi.pv)
	pvc, err := m.opts.Claims.GetPersistentVolumeClaim(ctx, c.pod.Namespace, c.claim)
	if err != nil {
		log.V(2).Info("Expansion check: reading the claim failed", "err", err)
		return
	}
	if pvc.Spec.VolumeName != c.csi.pv {
		return
	}
	pv, err := m.opts.Claims.GetPersistentVolume(ctx, c.csi.pv)
	if err != nil {
		log.V(2).Info("Expansion check: reading the PersistentVolume failed", "err", err)
		return
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != c.csi.driver || pv.Spec.CSI.VolumeHandle != c.csi.handle {
		return
	}
	canExpand, err := m.csi.CanExpand(ctx, c.csi.driver)
	if err != nil {
		log.V(2).Info("Expansion check: the driver's capabilities are unknown", "err", err)
		return
	}
	st := m.expansionState(c.pod.UID, c.volume)
	m.expMu.Lock()
	in := expansionInput{PVC: pvc, PVSize: pv.Spec.Capacity[v1.ResourceStorage], NodeSize: st.nodeSize, ReadOnly: c.ro,
		DriverExpands: canExpand, InUseRefused: st.inUseRefused, FailedFinal: st.failedFinal}
	m.expMu.Unlock()
	d := decideExpansion(in)
	m.expMu.Lock()
	st.nodeSize = d.NodeSize
	m.expMu.Unlock()

	switch d.Action {
	case expandNothing:
		log.V(5).Info("Expansion check", "decision", d.Action, "reason", d.Reason)
	case expandWait:
		log.V(3).Info("The volume grew; its node expansion waits", "reason", d.Reason, "pvSize", in.PVSize.String(), "nodeSize", d.NodeSize.String())
	case expandReadOnly:
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", pv.Name)
		if m.reportOnce(st, msg+in.PVSize.String()) {
			log.Info("Not expanding a volume mounted read-only", "pvSize", in.PVSize.String(), "nodeSize", d.NodeSize.String())
			m.opts.Recorder.Event(c.pod, v1.EventTypeWarning, EventFileSystemResizeFailed, msg)
			m.opts.Recorder.Event(pvc, v1.EventTypeWarning, EventFileSystemResizeFailed, msg)
		}
	case expandAlreadyDone:
		log.Info("The claim already has the volume's new size; no node expansion", "size", d.NewSize.String(), "reason", d.Reason)
		m.expMu.Lock()
		st.nodeSize, st.count = d.NewSize, st.count+1
		m.expMu.Unlock()
	case expandNotSupported:
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q : CSI driver %q does not have the node capability EXPAND_VOLUME", pv.Name, c.csi.driver)
		if m.reportOnce(st, msg) {
			log.Info("The claim waits for a node expansion the driver cannot do", "driver", c.csi.driver, "size", d.NewSize.String())
			m.opts.Recorder.Event(c.pod, v1.EventTypeWarning, EventVolumeResizeFailed, msg)
		}
	case expandCall:
		m.expand(ctx, log, c, pvc, pv, st, d)
	}
}

// reportOnce reports whether msg is new for the volume (and remembers it).
func (m *Manager) reportOnce(st *expansionState, msg string) bool {
	m.expMu.Lock()
	defer m.expMu.Unlock()
	if st.reported == msg {
		return false
	}
	st.reported = msg
	return true
}

// expand does an expandCall decision.
func (m *Manager) expand(ctx context.Context, log klog.Logger, c expandCandidate, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume,
	st *expansionState, d expansionDecision) {
	fail := func(err error) {
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q : %v", pv.Name, err)
		log.Error(err, "Node expansion of a volume failed", "size", d.NewSize.String())
		if m.reportOnce(st, msg) {
			m.opts.Recorder.Event(c.pod, v1.EventTypeWarning, EventVolumeResizeFailed, msg)
		}
	}
	cur := pvc
	if d.MarkInProgress {
		if m.opts.ClaimStatus == nil {
			fail(errors.New("this kubelet cannot write claim status"))
			return
		}
		updated, err := m.patchClaimStatus(ctx, pvc, expansionInProgress(pvc), true)
		if err != nil {
			fail(fmt.Errorf("marking the claim's node expansion in progress: %w", err))
			return
		}
		cur = updated
	}
	log.Info("Expanding a volume on the node", "driver", c.csi.driver, "from", d.NodeSize.String(), "to", d.NewSize.String(), "reason", d.Reason)
	_, err := m.csi.ExpandVolume(ctx, volcsi.Persistent(c.pod, c.volume, pv, c.ro), d.NewSize.Value())
	if err != nil {
		fail(err)
		code := grpcCode(err)
		if code == codes.FailedPrecondition {
			// The driver cannot grow it while in use: no more tries
			// while it is mounted (upstream's in-use expansion error).
			m.expMu.Lock()
			st.inUseRefused = true
			m.expMu.Unlock()
			return
		}
		if !plugincsi.Final(err) || m.opts.ClaimStatus == nil {
			return // uncertain: tried again next check
		}
		m.expMu.Lock()
		st.failedFinal = true
		m.expMu.Unlock()
		infeasible := d.InfeasibleOnFailure || code == codes.InvalidArgument || code == codes.OutOfRange || code == codes.NotFound
		if _, perr := m.patchClaimStatus(ctx, cur, expansionFailed(cur, err, infeasible, metav1.Now()), false); perr != nil {
			log.Error(perr, "Recording a failed node expansion in the claim's status")
		}
		return
	}
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, m.opts.NodeName)
	m.opts.Recorder.Event(c.pod, v1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
	m.opts.Recorder.Event(cur, v1.EventTypeNormal, EventFileSystemResizeSuccessful, msg)
	log.Info("Volume expanded on the node", "driver", c.csi.driver, "size", d.NewSize.String())
	if d.UpdateClaim {
		if m.opts.ClaimStatus == nil {
			fail(errors.New("this kubelet cannot write claim status"))
			return
		}
		if _, err := m.patchClaimStatus(ctx, cur, expansionFinished(cur, d.NewSize), true); err != nil {
			// The node size stays: the next check expands again (the
			// call is idempotent) and writes the claim then.
			fail(fmt.Errorf("updating the claim's capacity after the node expansion: %w", err))
			return
		}
	}
	m.expMu.Lock()
	st.nodeSize, st.count, st.failedFinal, st.reported = d.NewSize, st.count+1, false, ""
	m.expMu.Unlock()
}

func (m *Manager) patchClaimStatus(ctx context.Context, old, updated *v1.PersistentVolumeClaim, withVersion bool) (*v1.PersistentVolumeClaim, error) {
	patch, err := claimStatusPatch(old, updated, withVersion)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return m.opts.ClaimStatus.PatchPersistentVolumeClaimStatus(ctx, old.Namespace, old.Name, patch)
}

// grpcCode is the gRPC code of a driver call's failure (Unknown when the
// driver did not answer with one).
func grpcCode(err error) codes.Code {
	var ce *plugincsi.CallError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}
