package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/control"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/internal/vfs"
)

// TestJoinerLeavesMidMove (issue 19): an agent joins, the balancer starts
// moving partitions onto it, and it leaves before any of its new replicas
// has caught up (its disk refuses to create files, so none opens). The balancer cancels those moves once the joiner has been
// gone for --rebalance-settle: within a bounded time nothing is moving,
// nothing is under-replicated, every partition is back on its original
// replica, the cancels are counted, and every record is still read back.
// With one agent before the join, that agent is alone again and holds no
// lease (it cancelled nothing before the fix); with two, the lease holder
// cancels.
func TestJoinerLeavesMidMove(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d agents stay", n), func(t *testing.T) { joinerLeavesMidMove(t, n) })
	}
}

func joinerLeavesMidMove(t *testing.T, n int) {
	const settle = 2 * time.Second
	tweak := func(cfg *Config) {
		cfg.RebalanceSettle = settle
		cfg.AutoLeaderRebalance = false
	}
	c := startClusterWith(t, n, tweak)
	const topic, partitions = "gone", 4
	c.create(topic, partitions, 1, nil)
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for idx := range int32(partitions) {
		for i := range 5 {
			r := &kgo.Record{Partition: idx, Value: fmt.Appendf(nil, "%d-%d", idx, i)}
			if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
				t.Fatalf("produce to %d: %v", idx, err)
			}
		}
	}
	first := c.agents[0]
	e, _ := first.entry(topic)
	topicID := e.Snap.ID
	states := func() []metadata.PartitionState {
		var out []metadata.PartitionState
		for idx := range int32(partitions) {
			st, _, err := first.store.PartitionState(ctxT(t), topicID, idx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, st)
		}
		return out
	}

	before := states()
	fs := vfs.NewFaulty(vfs.Default)
	cfg := clusterConfig(filepath.Join(c.dir, fmt.Sprint("agent", n)), c.store)
	tweak(&cfg)
	cfg.Gossip.Join = []string{first.members.Self().GossipAddr}
	c.cfgs = append(c.cfgs, cfg)
	joiner := start(t, cfg, fs)
	c.agents = append(c.agents, joiner)
	testwait.Until(t, 20*time.Second, func() bool { return len(first.ctl.ActiveAgents()) == n+1 }, "the joiner to be active")
	// From here the joiner cannot create files: the replicas it is given
	// fail to open (it retries at each re-read), so none fetches or joins
	// the ISR, and no move can complete before it leaves.
	fs.FailAfter(vfs.OpCreate, 0, syscall.EIO)
	testwait.Until(t, 30*time.Second, func() bool {
		return slices.ContainsFunc(states(), func(st metadata.PartitionState) bool { return slices.Contains(st.Adding, joiner.id) })
	}, "moves onto the joiner")
	left := time.Now()
	joiner.cancel()
	joiner.cancel = nil
	select {
	case err := <-joiner.done:
		if err != nil {
			t.Errorf("joiner's Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the joiner did not stop within 30s")
	}

	var last []metadata.PartitionState
	testwait.Until(t, settle+control.LeaseTerm+10*time.Second, func() bool {
		last = states()
		for _, st := range last {
			if st.Moving() || len(st.ISR) < len(st.Replicas) || st.Leader < 0 {
				return false
			}
		}
		return true
	}, "nothing moving and nothing under-replicated (last: %+v)", &last)
	took := time.Since(left)
	for idx, st := range last {
		if !slices.Equal(st.Replicas, before[idx].Replicas) || st.Leader != before[idx].Leader {
			t.Errorf("partition %d: replicas %v led by %d, want %v led by %d as before the join", idx, st.Replicas, st.Leader, before[idx].Replicas, before[idx].Leader)
		}
	}
	var cancelled float64
	for _, a := range c.agents[:n] {
		cancelled += counterValue(t, a, "strata_reassignments_cancelled_total")
	}
	// The joiner may have held the balancer lease: stopping, it drains,
	// and cancels the moves to itself before it goes. Its HTTP port is
	// closed, so its counter is read from its registry.
	families, _ := joiner.registry.Gather() // a partial gather still has what it could collect
	for _, f := range families {
		if f.GetName() == "strata_reassignments_cancelled_total" {
			for _, m := range f.GetMetric() {
				cancelled += m.GetCounter().GetValue()
			}
		}
	}
	t.Logf("moves cancelled: %v, %v after the joiner left (settle %v)", cancelled, took.Round(time.Millisecond), settle)
	if cancelled < 1 {
		t.Errorf("strata_reassignments_cancelled_total = %v, want at least 1", cancelled)
	}
	for idx := range partitions {
		leader := c.agents[slices.IndexFunc(c.agents[:n], func(a *running) bool { return a.id == before[idx].Leader })]
		got := fetchValues(t, leader.client(t), topic, int32(idx))
		if len(got) != 5 {
			t.Errorf("partition %d: read back %q, want 5 records", idx, got)
		}
	}
}
