package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/internal/testwait"
)

// TestAlterPartitionReassignments: kadm moves a partition of two replicas
// onto the third agent, replacing its leader; ListPartitionReassignments
// shows the move in flight, then nothing; the new replica copies the log,
// the old one is removed from its agent, leadership moves to the first
// target replica, and every record is still read back once.
func TestAlterPartitionReassignments(t *testing.T) {
	c := startCluster(t, 3)
	c.create("mv", 1, 2, nil)
	li := c.leaderOf("mv", 0)
	st, _ := localPartition(c.agents[li], "mv", 0).StateAndETag()
	var newcomer *running
	for _, a := range c.agents {
		if !slices.Contains(st.Replicas, a.id) {
			newcomer = a
		}
	}
	other := st.Replicas[0]
	if other == c.agents[li].id {
		other = st.Replicas[1]
	}
	produce := c.sequenceProducer("mv")
	produce(0, 100)

	adm := kadm.NewClient(c.client())
	var req kadm.AlterPartitionAssignmentsReq
	target := []int32{newcomer.id, other}
	req.Assign("mv", 0, target)
	resp, err := adm.AlterPartitionAssignments(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp["mv"][0].Err; err != nil {
		t.Fatalf("alter: %v %s", err, resp["mv"][0].ErrMessage)
	}
	listed, err := adm.ListPartitionReassignments(ctxT(t), kadm.TopicsSet{"mv": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	inFlight, ok := listed["mv"][0]
	if !ok || !slices.Contains(inFlight.Replicas, newcomer.id) || !slices.Equal(inFlight.RemovingReplicas, []int32{c.agents[li].id}) {
		t.Fatalf("in flight: %+v (listed %v), want agent %d added and %d removing", inFlight, ok, newcomer.id, c.agents[li].id)
	}
	testwait.Until(t, 30*time.Second, func() bool {
		listed, err := adm.ListPartitionReassignments(ctxT(t), kadm.TopicsSet{"mv": {0: {}}})
		return err == nil && len(listed["mv"]) == 0
	}, "the move to complete")
	testwait.Until(t, 10*time.Second, func() bool {
		for _, a := range c.agents {
			e, _ := a.entry("mv")
			p := e.Snap.Partitions[0]
			if !slices.Equal(p.Replicas(), target) || p.Leader() != newcomer.id {
				return false
			}
		}
		return true
	}, "every agent to see the new replicas")
	if p := localPartition(c.agents[li], "mv", 0); p != nil {
		t.Fatalf("the removed replica is still open on agent %d", c.agents[li].id)
	}
	produce(100, 150)
	c.checkSequence("mv", 150)
	// A target naming an agent that does not exist is refused by name.
	var bad kadm.AlterPartitionAssignmentsReq
	bad.Assign("mv", 0, []int32{newcomer.id, 99})
	resp, err = adm.AlterPartitionAssignments(ctxT(t), bad)
	if err != nil || resp["mv"][0].Err != kerr.InvalidReplicaAssignment {
		t.Fatalf("target with an unknown agent: %v / %+v, want INVALID_REPLICA_ASSIGNMENT", err, resp["mv"][0])
	}
}

// TestMoveToDeadAgentRollsBack: a move waiting for a replica on an agent
// that is not alive (here one that never existed, written straight into
// the store) is cancelled by the balancer; the partition keeps its leader
// and original replicas throughout.
func TestMoveToDeadAgentRollsBack(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) { cfg.RebalanceSettle = time.Second })
	c.create("dead", 1, 2, nil)
	li := c.leaderOf("dead", 0)
	p := localPartition(c.agents[li], "dead", 0)
	st, etag := p.StateAndETag()
	moving, err := st.Reassign([]int32{st.Replicas[0], 99}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.agents[li].store.CASPartitionState(ctxT(t), p.TopicID(), 0, moving, etag); err != nil {
		t.Fatal(err)
	}
	c.agents[li].ctl.RefreshState(p)
	testwait.Until(t, 30*time.Second, func() bool {
		got, _, err := c.agents[li].store.PartitionState(ctxT(t), p.TopicID(), 0)
		return err == nil && !got.Moving() && slices.Equal(got.Replicas, st.Replicas) && got.Leader == st.Leader
	}, "the stalled move to be rolled back")
}
