package volume

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	plugincsi "github.com/gokubelet/kubelet/pkg/plugins/csi"
	volcsi "github.com/gokubelet/kubelet/pkg/volume/csi"
)

// ClaimVolume is a pod's volume backed by a PersistentVolumeClaim whose
// usage the node reports (kubelet_volume_stats_*, the Summary API's
// pvcRef): one set up on a local PersistentVolume (statfs of its
// directory), or a CSI one (its driver's NodeGetVolumeStats, see
// CSIVolumeStats). Upstream's hostPath volume plugin reports no usage, so
// hostPath PersistentVolumes are not listed. An inline CSI volume is
// listed too, with no Claim: upstream reports its driver's usage, without
// a pvcRef and not as ephemeral storage.
type ClaimVolume struct {
	// Volume is the pod's volume name; Claim the claim's name (for a
	// generic ephemeral volume, the claim created for it), in the pod's
	// namespace.
	Volume string
	Claim  string
	// Path is the volume's directory on the node (a CSI volume's publish
	// target).
	Path string
	// CSIDriver and CSIHandle are a CSI volume's driver and volume ID
	// ("" for a local volume).
	CSIDriver, CSIHandle string
	// Expansions counts the node expansions of the volume since it was
	// set up: its usage is measured again after each.
	Expansions int
}

// ClaimVolumes lists the pod's claim volumes that are set up and whose
// usage the node reports, by volume name. It never waits for a set-up
// under way.
func (m *Manager) ClaimVolumes(uid types.UID) []ClaimVolume {
	m.claimMu.Lock()
	out := append([]ClaimVolume(nil), m.claims[uid]...)
	m.claimMu.Unlock()
	for i := range out {
		if out[i].CSIDriver != "" {
			out[i].Expansions = m.expansionCount(uid, out[i].Volume)
		}
	}
	return out
}

// CSIVolumeStats asks a CSI claim volume's driver its usage
// (NodeGetVolumeStats on the publish target, bounded by the driver call
// timeout). A driver without GET_VOLUME_STATS gives a
// *volcsi.NotSupportedError: upstream leaves such volumes out.
func (m *Manager) CSIVolumeStats(ctx context.Context, c ClaimVolume) (plugincsi.VolumeUsage, error) {
	if m.csi == nil || c.CSIDriver == "" {
		return plugincsi.VolumeUsage{}, fmt.Errorf("volume %q is no CSI volume", c.Volume)
	}
	return m.csi.VolumeStats(ctx, c.CSIDriver, c.CSIHandle, c.Path)
}

// recordClaims notes the pod's measurable claim volumes after a set-up
// (pv.mu held).
func (m *Manager) recordClaims(uid types.UID, pv *podVolumes) {
	var out []ClaimVolume
	for name, vs := range pv.vols {
		if !vs.ready || vs.path == "" {
			continue
		}
		if in, ok := vs.src.(*csiInline); ok {
			// Reported as upstream does, without a claim.
			out = append(out, ClaimVolume{Volume: name, Path: vs.path, CSIDriver: in.vol.CSI.Driver,
				CSIHandle: volcsi.EphemeralHandle(string(uid), name)})
			continue
		}
		c, ok := vs.src.(*claim)
		if !ok {
			continue
		}
		switch {
		case c.local:
			out = append(out, ClaimVolume{Volume: name, Claim: c.name, Path: vs.path})
		case c.csi != nil:
			out = append(out, ClaimVolume{Volume: name, Claim: c.name, Path: vs.path, CSIDriver: c.csi.driver, CSIHandle: c.csi.handle})
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
