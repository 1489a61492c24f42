package agent

// Gauges for operators' alerts (deploy/monitoring), read at scrape time
// like partition.NewCollector's, so that no request path pays for them:
//
//	strata_leaderless_partitions               partitions of every topic this agent knows whose
//	                                           state names no leader, or one gossip does not show live
//	strata_data_dir_free_bytes                 bytes free to this process on --data-dir's filesystem
//	strata_data_dir_capacity_bytes             size of that filesystem
//	strata_group_committed_offset{group,topic,partition}
//	                                           committed offsets of the groups this agent coordinates
//
// Every agent reports leaderless partitions as it sees the cluster, so a
// dashboard takes the max over agents, not the sum. Consumer lag is not
// computed here: the coordinator rarely holds the partitions its groups
// read, so lag is the partition's high watermark (from its replicas)
// minus the committed offset (from the coordinator), joined in PromQL.

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/vfs"
)

type opsCollector struct {
	a                              *Agent
	leaderless, diskFree, diskSize *prometheus.Desc
	committedOffset                *prometheus.Desc
}

func newOpsCollector(a *Agent) *opsCollector {
	return &opsCollector{
		a: a,
		leaderless: prometheus.NewDesc("strata_leaderless_partitions",
			"Partitions of the topics this agent knows whose state names no leader, or a leader that gossip does not show as live.", nil, nil),
		diskFree: prometheus.NewDesc("strata_data_dir_free_bytes",
			"Bytes free to the agent on the filesystem of --data-dir.", nil, nil),
		diskSize: prometheus.NewDesc("strata_data_dir_capacity_bytes",
			"Size in bytes of the filesystem of --data-dir.", nil, nil),
		committedOffset: prometheus.NewDesc("strata_group_committed_offset",
			"Offset committed by a consumer group this agent coordinates, by group, topic and partition.",
			[]string{"group", "topic", "partition"}, nil),
	}
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leaderless, c.diskFree, c.diskSize, c.committedOffset} {
		ch <- d
	}
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.leaderless, prometheus.GaugeValue, float64(c.a.leaderlessPartitions()))
	// Where the OS cannot tell (vfs.StatDisk), the two gauges are absent
	// rather than zero, which an alert would read as a full disk.
	if ds, err := vfs.StatDisk(c.a.cfg.DataDir); err == nil {
		ch <- prometheus.MustNewConstMetric(c.diskFree, prometheus.GaugeValue, float64(ds.Free))
		ch <- prometheus.MustNewConstMetric(c.diskSize, prometheus.GaugeValue, float64(ds.Total))
	}
	for _, coord := range c.a.coords.CurrentGroupCoordinators() {
		for _, g := range coord.List() {
			offsets, err := coord.FetchOffsets(g.Group, nil)
			if err != nil {
				continue // closed since it was listed: its new leader reports it
			}
			for tp, o := range offsets {
				ch <- prometheus.MustNewConstMetric(c.committedOffset, prometheus.GaugeValue, float64(o.Offset),
					g.Group, tp.Topic, strconv.Itoa(int(tp.Partition)))
			}
		}
	}
}

// leaderlessPartitions counts the partitions whose leader is -1 or not a
// live agent.
func (a *Agent) leaderlessPartitions() int {
	live := map[int32]bool{a.id: true}
	if a.members != nil {
		for _, m := range a.members.Members() {
			live[m.ID] = true
		}
	}
	n := 0
	for _, t := range a.Topics() {
		for _, p := range t.Partitions {
			if leader := partition.StateOf(p).Leader; leader < 0 || !live[leader] {
				n++
			}
		}
	}
	return n
}
