package partition

import (
	"strconv"
	"time"

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
	// The load (package loadstat), per partition and summed over the
	// agent's, and the agent's id, which the per-agent numbers belong to
	// (`strata cluster status --http` reads them).
	bytesIn, bytesOut, agentIn, agentOut, agentLocal, agentInfo *prometheus.Desc
	// The agent's in plus out, and that over networkCapacity: an
	// autoscaler's signal. Summed in the same pass as agentIn and
	// agentOut, so that one scrape's numbers add up exactly.
	agentNetwork, agentUtilization *prometheus.Desc
	networkCapacity                float64 // bytes per second; 0: no utilization
}

// NewCollector exports the offsets, size and counters of the partitions
// that partitions returns at each scrape, and how many of those that
// agent self leads are under-replicated. partitions is called from the
// scraping goroutine. networkCapacity is the bytes per second the agent
// is sized for (--network-capacity); when it is 0 the utilization ratio
// is absent, not 0, which an autoscaler would read as an idle agent.
func NewCollector(self int32, partitions func() []*Partition, networkCapacity int64) prometheus.Collector {
	labels := []string{"topic", "partition"}
	return &collector{
		self:            self,
		partitions:      partitions,
		networkCapacity: float64(max(networkCapacity, 0)),
		logEnd:          prometheus.NewDesc("strata_partition_log_end_offset", "Next offset to be written.", labels, nil),
		highWater:       prometheus.NewDesc("strata_partition_high_watermark", "Offset below which consumers may read.", labels, nil),
		logStart:        prometheus.NewDesc("strata_partition_log_start_offset", "First offset still kept.", labels, nil),
		sizeDesc:        prometheus.NewDesc("strata_partition_log_size_bytes", "Bytes of the partition's local segment files.", labels, nil),
		underReplicated: prometheus.NewDesc("strata_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", nil, nil),
		appends:         prometheus.NewDesc("strata_partition_appends_total", "Batches appended since the agent started.", labels, nil),
		fsyncs:          prometheus.NewDesc("strata_partition_fsyncs_total", "Fsyncs of segment files since the agent started; below appends_total means group commit.", labels, nil),
		fsyncSeconds: prometheus.NewDesc("strata_partition_fsync_seconds_total",
			"Time the partition's fsyncs took since the agent started, a wait for a shared --log-group-sync included; divided by strata_partition_fsyncs_total, the mean fsync.", labels, nil),
		bytesIn: prometheus.NewDesc("strata_partition_in_bytes_per_second",
			"Bytes per second this replica appended (produced to it as leader, copied from the leader as follower), a moving average over about 20 s.", labels, nil),
		bytesOut: prometheus.NewDesc("strata_partition_out_bytes_per_second",
			"Bytes per second read from this replica by consumers and followers, a moving average over about 20 s.", labels, nil),
		agentIn: prometheus.NewDesc("strata_agent_in_bytes_per_second",
			"strata_partition_in_bytes_per_second summed over the agent's replicas: the network load the balancer's placement evens out (--rebalance-by load).", nil, nil),
		agentOut: prometheus.NewDesc("strata_agent_out_bytes_per_second",
			"strata_partition_out_bytes_per_second summed over the agent's replicas.", nil, nil),
		agentLocal: prometheus.NewDesc("strata_agent_local_log_bytes",
			"strata_partition_log_size_bytes summed over the agent's replicas: the disk load the balancer's placement evens out.", nil, nil),
		agentInfo: prometheus.NewDesc("strata_agent_info", "Always 1; agent_id is this agent's id.", []string{"agent_id"}, nil),
		agentNetwork: prometheus.NewDesc("strata_agent_network_bytes_per_second",
			"strata_agent_in_bytes_per_second plus strata_agent_out_bytes_per_second: record bytes per second the agent's replicas took in (produced, copied from leaders) and sent out (to consumers, to followers), a moving average over about 20 s. Not counted: protocol framing, TLS, and the object store's uploads and reads.", nil, nil),
		agentUtilization: prometheus.NewDesc("strata_agent_utilization_ratio",
			"strata_agent_network_bytes_per_second divided by --network-capacity, the traffic the agent is sized for; an autoscaler's signal. Absent when --network-capacity is not set.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logEnd, c.highWater, c.logStart, c.sizeDesc, c.underReplicated, c.appends, c.fsyncs, c.fsyncSeconds,
		c.bytesIn, c.bytesOut, c.agentIn, c.agentOut, c.agentLocal, c.agentInfo, c.agentNetwork} {
		ch <- d
	}
	if c.networkCapacity > 0 {
		ch <- c.agentUtilization
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	under := 0
	now := time.Now()
	var in, out, local float64
	for _, p := range c.partitions() {
		l := []string{p.Topic(), strconv.Itoa(int(p.Index()))}
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
		}
		gauge(c.logEnd, p.LogEndOffset())
		gauge(c.highWater, p.HighWatermark())
		gauge(c.logStart, p.LogStartOffset())
		size := p.Size()
		gauge(c.sizeDesc, size)
		r := p.Load(now)
		ch <- prometheus.MustNewConstMetric(c.bytesIn, prometheus.GaugeValue, r.BytesIn, l...)
		ch <- prometheus.MustNewConstMetric(c.bytesOut, prometheus.GaugeValue, r.BytesOut+r.ReplicaBytesOut, l...)
		in, out, local = in+r.BytesIn, out+r.BytesOut+r.ReplicaBytesOut, local+float64(size)
		st := p.LocalLog().Stats()
		ch <- prometheus.MustNewConstMetric(c.appends, prometheus.CounterValue, float64(st.Appends), l...)
		ch <- prometheus.MustNewConstMetric(c.fsyncs, prometheus.CounterValue, float64(st.Fsyncs), l...)
		ch <- prometheus.MustNewConstMetric(c.fsyncSeconds, prometheus.CounterValue, st.FsyncTime.Seconds(), l...)
		if p.Leader() == c.self && len(p.ISR()) < len(p.Replicas()) {
			under++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(c.agentIn, prometheus.GaugeValue, in)
	ch <- prometheus.MustNewConstMetric(c.agentOut, prometheus.GaugeValue, out)
	ch <- prometheus.MustNewConstMetric(c.agentNetwork, prometheus.GaugeValue, in+out)
	if c.networkCapacity > 0 {
		ch <- prometheus.MustNewConstMetric(c.agentUtilization, prometheus.GaugeValue, (in+out)/c.networkCapacity)
	}
	ch <- prometheus.MustNewConstMetric(c.agentLocal, prometheus.GaugeValue, local)
	ch <- prometheus.MustNewConstMetric(c.agentInfo, prometheus.GaugeValue, 1, strconv.Itoa(int(c.self)))
}
