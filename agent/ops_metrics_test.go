package agent

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/testwait"
)

// gaugeValue reads a gauge of agent a by name from the series whose labels
// are exactly the pairs given; ok is false when there is no such series.
func gaugeValue(t *testing.T, a *running, name string, labelPairs ...string) (float64, bool) {
	t.Helper()
	mfs, err := a.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k := 0; k+1 < len(labelPairs); k += 2 {
		want[labelPairs[k]] = labelPairs[k+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestOpsMetrics: a committed offset shows as strata_group_committed_offset
// on the coordinator, the data directory's filesystem has a size and some
// free bytes, and a lone healthy agent has no leaderless partition.
func TestOpsMetrics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.OffsetsTopicPartitions = 3
	a := start(t, cfg, nil)
	cl := a.client(t)
	createTopic(t, cl, "orders", 2, nil)

	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 7, LeaderEpoch: -1})
	resp, err := kadm.NewClient(cl).CommitOffsets(ctxT(t), "billing", offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if v, ok := gaugeValue(t, a, "strata_group_committed_offset", "group", "billing", "topic", "orders", "partition", "1"); !ok || v != 7 {
		t.Errorf("strata_group_committed_offset{billing,orders,1} = %v (present %v), want 7", v, ok)
	}
	free, okFree := gaugeValue(t, a, "strata_data_dir_free_bytes")
	size, okSize := gaugeValue(t, a, "strata_data_dir_capacity_bytes")
	if !okFree || !okSize || size <= 0 || free > size {
		t.Errorf("data dir: free %v (present %v) of %v (present %v)", free, okFree, size, okSize)
	}
	if v, ok := gaugeValue(t, a, "strata_leaderless_partitions"); !ok || v != 0 {
		t.Errorf("strata_leaderless_partitions = %v (present %v), want 0", v, ok)
	}
}

// TestLeaderlessPartitions: a partition whose only replica's agent stops
// has no live leader, and the other agent counts it.
func TestLeaderlessPartitions(t *testing.T) {
	c := startCluster(t, 2)
	c.create("solo", 2, 1, nil)
	survivor := c.agents[0]
	orphaned := 0
	for i := range int32(2) {
		if c.leaderOf("solo", i) == 1 {
			orphaned++
		}
	}
	if orphaned == 0 {
		t.Fatal("placement put both partitions on agent 0; the test needs one on agent 1")
	}
	if v, _ := gaugeValue(t, survivor, "strata_leaderless_partitions"); v != 0 {
		t.Fatalf("strata_leaderless_partitions = %v with both agents up, want 0", v)
	}
	c.agents[1].stop(t)
	testwait.Until(t, 20*time.Second, func() bool { return len(survivor.placementAgents()) == 1 }, "agent 0 to see agent 1 gone")
	if v, _ := gaugeValue(t, survivor, "strata_leaderless_partitions"); v != float64(orphaned) {
		t.Fatalf("strata_leaderless_partitions = %v, want the %d partitions led by the stopped agent", v, orphaned)
	}
}
