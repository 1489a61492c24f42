package partition

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector exports per-partition gauges, read at scrape time so the
// append path pays nothing for them.
type collector struct {
	self                                  int32
	partitions                            func() []*Partition
	logEnd, highWater, logStart, sizeDesc *prometheus.Desc
	underReplicated, appends, fsyncs      *prometheus.Desc
	fsyncSeconds                          *prometheus.Desc
}

// NewCollector exports the offsets, size and counters of the partitions
// that partitions returns at each scrape, and how many of those that
// agent self leads are under-replicated. partitions is called from the
// scraping goroutine.
func NewCollector(self int32, partitions func() []*Partition) prometheus.Collector {
	labels := []string{"topic", "partition"}
	return &collector{
		self:            self,
		partitions:      partitions,
		logEnd:          prometheus.NewDesc("strata_partition_log_end_offset", "Next offset to be written.", labels, nil),
		highWater:       prometheus.NewDesc("strata_partition_high_watermark", "Offset below which consumers may read.", labels, nil),
		logStart:        prometheus.NewDesc("strata_partition_log_start_offset", "First offset still kept.", labels, nil),
		sizeDesc:        prometheus.NewDesc("strata_partition_log_size_bytes", "Bytes of the partition's local segment files.", labels, nil),
		underReplicated: prometheus.NewDesc("strata_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", nil, nil),
		appends:         prometheus.NewDesc("strata_partition_appends_total", "Batches appended since the agent started.", labels, nil),
		fsyncs:          prometheus.NewDesc("strata_partition_fsyncs_total", "Fsyncs of segment files since the agent started; below appends_total means group commit.", labels, nil),
		fsyncSeconds: prometheus.NewDesc("strata_partition_fsync_seconds_total",
			"Time the partition's fsyncs took since the agent started, a wait for a shared --log-group-sync included; divided by strata_partition_fsyncs_total, the mean fsync.", labels, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logEnd, c.highWater, c.logStart, c.sizeDesc, c.underReplicated, c.appends, c.fsyncs, c.fsyncSeconds} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	under := 0
	for _, p := range c.partitions() {
		l := []string{p.Topic(), strconv.Itoa(int(p.Index()))}
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
		}
		gauge(c.logEnd, p.LogEndOffset())
		gauge(c.highWater, p.HighWatermark())
		gauge(c.logStart, p.LogStartOffset())
		gauge(c.sizeDesc, p.Size())
		st := p.LocalLog().Stats()
		ch <- prometheus.MustNewConstMetric(c.appends, prometheus.CounterValue, float64(st.Appends), l...)
		ch <- prometheus.MustNewConstMetric(c.fsyncs, prometheus.CounterValue, float64(st.Fsyncs), l...)
		ch <- prometheus.MustNewConstMetric(c.fsyncSeconds, prometheus.CounterValue, st.FsyncTime.Seconds(), l...)
		if p.Leader() == c.self && len(p.ISR()) < len(p.Replicas()) {
			under++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(under))
}
