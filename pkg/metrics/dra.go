package metrics

import (
	"k8s.io/component-base/metrics"
)

// DRAClaimsSource returns the ResourceClaims in use on the node by DRA
// driver name, and in all under "<any>" (pkg/plugins/dra); it is called at
// scrape time only.
type DRAClaimsSource func() map[string]int

// Upstream's dra_resource_claims_in_use: a gauge computed when scraped, so
// a driver that is gone leaves no series behind.
var draClaimsInUseDesc = metrics.NewDesc(
	metrics.BuildFQName("", "dra", "resource_claims_in_use"),
	"The number of ResourceClaims in use on the node, by driver name (driver_name) and across all drivers (driver_name \"<any>\"). A claim with devices of several drivers counts once for each of them, and once under <any>.",
	[]string{"driver_name"}, nil, metrics.ALPHA, "")

type draClaimsCollector struct {
	metrics.BaseStableCollector
	source DRAClaimsSource
}

func (c *draClaimsCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- draClaimsInUseDesc
}

func (c *draClaimsCollector) CollectWithStability(ch chan<- metrics.Metric) {
	for driver, n := range c.source() {
		ch <- metrics.NewLazyConstMetric(draClaimsInUseDesc, metrics.GaugeValue, float64(n), driver)
	}
}
