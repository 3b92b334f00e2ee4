package metrics

import (
	"k8s.io/component-base/metrics"
)

// VolumeStats is the usage of one PersistentVolumeClaim's volume, as the
// stats provider measured it.
type VolumeStats struct {
	Namespace, PersistentVolumeClaim string

	CapacityBytes, AvailableBytes, UsedBytes uint64
	Inodes, InodesFree, InodesUsed           uint64
}

// VolumeStatsSource returns the volume stats of the claims in use; it is
// called at scrape time only, and must be cheap (no walk of a volume).
type VolumeStatsSource func() []VolumeStats

var volumeStatsLabels = []string{"namespace", "persistentvolumeclaim"}

func volumeDesc(name, help string) *metrics.Desc {
	return metrics.NewDesc(metrics.BuildFQName("", KubeletSubsystem, name), help, volumeStatsLabels, nil, metrics.ALPHA, "")
}

// Upstream's kubelet_volume_stats_* names and labels.
var (
	volumeCapacityDesc   = volumeDesc("volume_stats_capacity_bytes", "Size of the volume's filesystem in bytes, by claim.")
	volumeAvailableDesc  = volumeDesc("volume_stats_available_bytes", "Bytes available to the volume's users, by claim.")
	volumeUsedDesc       = volumeDesc("volume_stats_used_bytes", "Bytes used on the volume's filesystem, by claim.")
	volumeInodesDesc     = volumeDesc("volume_stats_inodes", "Inodes of the volume's filesystem, by claim.")
	volumeInodesFreeDesc = volumeDesc("volume_stats_inodes_free", "Free inodes of the volume's filesystem, by claim.")
	volumeInodesUsedDesc = volumeDesc("volume_stats_inodes_used", "Used inodes of the volume's filesystem, by claim.")
)

// volumeStatsCollector reports the volume stats of the claims in use when
// scraped; a claim used by several pods is reported once.
type volumeStatsCollector struct {
	metrics.BaseStableCollector
	source VolumeStatsSource
}

func (c *volumeStatsCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{volumeCapacityDesc, volumeAvailableDesc, volumeUsedDesc, volumeInodesDesc, volumeInodesFreeDesc, volumeInodesUsedDesc} {
		ch <- d
	}
}

func (c *volumeStatsCollector) CollectWithStability(ch chan<- metrics.Metric) {
	seen := map[[2]string]bool{}
	for _, v := range c.source() {
		key := [2]string{v.Namespace, v.PersistentVolumeClaim}
		if seen[key] {
			continue
		}
		seen[key] = true
		for _, m := range []struct {
			d *metrics.Desc
			v uint64
		}{
			{volumeCapacityDesc, v.CapacityBytes}, {volumeAvailableDesc, v.AvailableBytes}, {volumeUsedDesc, v.UsedBytes},
			{volumeInodesDesc, v.Inodes}, {volumeInodesFreeDesc, v.InodesFree}, {volumeInodesUsedDesc, v.InodesUsed},
		} {
			ch <- metrics.NewLazyConstMetric(m.d, metrics.GaugeValue, float64(m.v), v.Namespace, v.PersistentVolumeClaim)
		}
	}
}
