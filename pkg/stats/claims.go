package stats

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/gokubelet/kubelet/pkg/metrics"
)

// ClaimVolume is a pod's volume backed by a PersistentVolumeClaim whose
// usage is reported: the Summary API gives it a pvcRef and
// kubelet_volume_stats_* report it by claim.
type ClaimVolume struct {
	// Volume is the pod's volume name, Claim the claim's name in the
	// pod's namespace ("" for an inline CSI volume, which has Measure and
	// is reported in the Summary only), Path the volume's directory.
	Volume, Claim, Path string
	// Measure, when set, is the volume's usage as its driver reports it
	// (a CSI driver's NodeGetVolumeStats), used instead of statfs of
	// Path. It is a call to another process: it runs in the background,
	// at most once per VolumePeriod for each Key, and must bound its own
	// time. ErrUsageNotReported leaves the volume out.
	Measure func() (VolumeUsage, error)
	// Key names Measure's answers; a new Key (the volume was grown)
	// measures at once.
	Key string
}

// VolumeUsage is a volume's usage as its driver reports it: bytes and
// inodes, each total, available and used (0 where the driver says
// nothing, as upstream reports it).
type VolumeUsage struct {
	Capacity, Available, Used      uint64
	Inodes, InodesFree, InodesUsed uint64
}

// claimVolumes measures the pod's persistent volumes: a driver's answer
// where the volume has one (cached; waited for until deadline when there
// is none yet), else as upstream's local volume plugin does, statfs of
// the volume's filesystem (no walk, so it is done on every request). A
// volume that cannot be measured is left out.
func (p *Provider) claimVolumes(uid types.UID, now, deadline time.Time) []volumeInput {
	if p.o.ClaimVolumes == nil {
		return nil
	}
	var out []volumeInput
	for _, c := range p.o.ClaimVolumes(uid) {
		if c.Measure != nil {
			measure := c.Measure
			u, fi, at, ok := p.vols.getWith(c.Key, func() (DiskUsage, FsInfo, error) {
				v, err := measure()
				return DiskUsage{Bytes: v.Used, Inodes: v.InodesUsed},
					FsInfo{Capacity: v.Capacity, Available: v.Available, Used: v.Used, Inodes: v.Inodes, InodesFree: v.InodesFree}, err
			}, false, deadline)
			if ok {
				out = append(out, volumeInput{name: c.Volume, usage: u, fs: fi, time: at, claim: c.Claim, driver: true})
			}
			continue
		}
		fi, err := p.statfs()(c.Path)
		if err != nil {
			klog.V(2).InfoS("Measuring a persistent volume failed", "podUID", uid, "volume", c.Volume, "path", c.Path, "err", err)
			continue
		}
		out = append(out, volumeInput{name: c.Volume, fs: fi, time: now, claim: c.Claim})
	}
	return out
}

func (p *Provider) statfs() func(string) (FsInfo, error) {
	if p.fsInfo != nil {
		return p.fsInfo
	}
	return fsInfo
}

// VolumeStats are the kubelet_volume_stats_* of the persistent volumes of
// the running pods (those with a ready sandbox), one per claim, ordered by
// namespace and claim. It makes no CRI call: the pods come from the
// runtime cache and each volume costs one statfs.
func (p *Provider) VolumeStats() []metrics.VolumeStats {
	if p.o.ClaimVolumes == nil || p.o.Pods == nil {
		return nil
	}
	now := p.o.Clock.Now()
	seen := map[[2]string]bool{}
	var out []metrics.VolumeStats
	for _, ps := range p.o.Pods() {
		if ps.ReadySandbox() == nil {
			continue
		}
		// A scrape never waits for a driver: it gets the last answer.
		for _, v := range p.claimVolumes(ps.UID, now, now) {
			if v.claim == "" {
				continue // an inline CSI volume: no claim to report by
			}
			key := [2]string{ps.Namespace, v.claim}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, claimStats(ps.Namespace, v))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].PersistentVolumeClaim < out[j].PersistentVolumeClaim
	})
	return out
}

// claimStats maps a measured persistent volume to its metrics (the same
// numbers as its Summary API volume stats).
func claimStats(namespace string, v volumeInput) metrics.VolumeStats {
	fs := v.claimFsStats()
	st := metrics.VolumeStats{Namespace: namespace, PersistentVolumeClaim: v.claim,
		CapacityBytes: *fs.CapacityBytes, AvailableBytes: *fs.AvailableBytes, UsedBytes: *fs.UsedBytes,
		Inodes: *fs.Inodes, InodesFree: *fs.InodesFree}
	if fs.InodesUsed != nil {
		st.InodesUsed = *fs.InodesUsed
	}
	return st
}

// claimFsStats are a persistent volume's filesystem stats: its driver's
// numbers as they are, or its statfs.
func (v volumeInput) claimFsStats() *statsapi.FsStats {
	if v.driver {
		return fsStats(&v.fs, u64(v.usage.Bytes), u64(v.usage.Inodes), v.time)
	}
	return fsStats(&v.fs, nil, nil, v.time)
}
