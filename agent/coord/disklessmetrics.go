package coord

import (
	"github.com/prometheus/client_golang/prometheus"
)

// disklessCollector reports the batch coordinators loaded here: how many
// diskless partitions they hold and the memory of their offset indexes,
// which grow with every commit until object compaction trims them
// (docs/design.md §7a).
type disklessCollector struct {
	c                 *Coordinators
	partitions, bytes *prometheus.Desc
}

func newDisklessCollector(c *Coordinators) *disklessCollector {
	return &disklessCollector{c: c,
		partitions: prometheus.NewDesc("strata_diskless_coordinator_partitions",
			"Diskless partitions whose batch coordinator is loaded on this agent.", nil, nil),
		bytes: prometheus.NewDesc("strata_diskless_coordinator_index_bytes",
			"Approximate memory of the offset indexes of the batch coordinators loaded on this agent.", nil, nil)}
}

func (d *disklessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- d.partitions
	ch <- d.bytes
}

func (d *disklessCollector) Collect(ch chan<- prometheus.Metric) {
	var parts int
	var bytes int64
	for _, bc := range d.c.diskless.all(nil) {
		p, b := bc.Size()
		parts += p
		bytes += b
	}
	ch <- prometheus.MustNewConstMetric(d.partitions, prometheus.GaugeValue, float64(parts))
	ch <- prometheus.MustNewConstMetric(d.bytes, prometheus.GaugeValue, float64(bytes))
}
