package volume

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// ClaimVolume is a pod's volume backed by a PersistentVolumeClaim whose
// usage the node reports (kubelet_volume_stats_*, the Summary API's
// pvcRef): one set up on a local PersistentVolume. Upstream's hostPath
// volume plugin reports no usage, so hostPath PersistentVolumes are not
// listed.
type ClaimVolume struct {
	// Volume is the pod's volume name; Claim the claim's name (for a
	// generic ephemeral volume, the claim created for it), in the pod's
	// namespace.
	Volume string
	Claim  string
	// Path is the volume's directory on the node.
	Path string
}

// ClaimVolumes lists the pod's claim volumes that are set up and whose
// usage the node reports, by volume name. It never waits for a set-up
// under way.
func (m *Manager) ClaimVolumes(uid types.UID) []ClaimVolume {
	m.claimMu.Lock()
	defer m.claimMu.Unlock()
	return append([]ClaimVolume(nil), m.claims[uid]...)
}

// recordClaims notes the pod's measurable claim volumes after a set-up
// (pv.mu held).
func (m *Manager) recordClaims(uid types.UID, pv *podVolumes) {
	var out []ClaimVolume
	for name, vs := range pv.vols {
		if c, ok := vs.src.(*claim); ok && vs.ready && c.local && vs.path != "" {
			out = append(out, ClaimVolume{Volume: name, Claim: c.name, Path: vs.path})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Volume < out[j].Volume })
	m.claimMu.Lock()
	defer m.claimMu.Unlock()
	if len(out) == 0 {
		delete(m.claims, uid)
		return
	}
	if m.claims == nil {
		m.claims = map[types.UID][]ClaimVolume{}
	}
	m.claims[uid] = out
}

func (m *Manager) forgetClaims(uid types.UID) {
	m.claimMu.Lock()
	defer m.claimMu.Unlock()
	delete(m.claims, uid)
}
