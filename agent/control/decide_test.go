package control

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
)

func live(ids ...int32) map[int32]bool {
	m := map[int32]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// TestElectionResult: the first live ISR member in replica order leads in
// the next epoch with the live ISR; unclean election falls back to the
// first live replica with an ISR of itself; any other agent does nothing.
func TestElectionResult(t *testing.T) {
	st := metadata.PartitionState{Leader: 1, LeaderEpoch: 4, StateEpoch: 9, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}}
	for _, tc := range []struct {
		name     string
		self     int32
		live     map[int32]bool
		unclean  bool
		ok       bool
		wantISR  []int32
		wantLead int32
	}{
		{"first live ISR member in replica order", 3, live(2, 3), false, true, []int32{3}, 3},
		{"a live replica outside the ISR does not lead", 2, live(2, 3), false, false, nil, 0},
		{"the ISR keeps its live members", 1, live(1, 3), false, true, []int32{1, 3}, 1},
		{"no live ISR member: nobody, cleanly", 2, live(2), false, false, nil, 0},
		{"no live ISR member: the first live replica, uncleanly", 2, live(2), true, true, []int32{2}, 2},
		{"unclean election prefers the ISR when it is alive", 2, live(2, 3), true, false, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, ok := electionResult(st, tc.self, tc.live, tc.unclean)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, next)
			}
			if !ok {
				return
			}
			if next.Leader != tc.wantLead || next.LeaderEpoch != 5 || next.StateEpoch != 10 ||
				!slices.Equal(next.ISR, tc.wantISR) || !slices.Equal(next.Replicas, st.Replicas) {
				t.Fatalf("next = %+v, want leader %d epoch 5 state epoch 10 ISR %v", next, tc.wantLead, tc.wantISR)
			}
		})
	}
	if !slices.Equal(st.ISR, []int32{1, 3}) {
		t.Fatalf("electionResult changed its input's ISR to %v", st.ISR)
	}
}

// TestPreferredLeaderState: leadership moves to the first replica in a new
// epoch only when it is alive, in sync and not leading already.
func TestPreferredLeaderState(t *testing.T) {
	base := metadata.PartitionState{Leader: 2, LeaderEpoch: 7, StateEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	for _, tc := range []struct {
		name    string
		leader  int32
		isr     []int32
		live    []int32
		wantErr error
	}{
		{"moves to the first replica", 2, []int32{1, 2, 3}, []int32{1, 2, 3}, nil},
		{"already leads", 1, []int32{1, 2, 3}, []int32{1, 2, 3}, dataplane.ErrElectionNotNeeded},
		{"not in sync", 2, []int32{2, 3}, []int32{1, 2, 3}, dataplane.ErrPreferredLeaderNotAvailable},
		{"not alive", 2, []int32{1, 2, 3}, []int32{2, 3}, dataplane.ErrPreferredLeaderNotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base
			st.Leader, st.ISR = tc.leader, tc.isr
			next, err := preferredLeaderState(st, tc.live)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if next.Leader != 1 || next.LeaderEpoch != 8 || next.StateEpoch != 4 {
				t.Fatalf("next = %+v, want leader 1, epochs 8 and 4", next)
			}
		})
	}
}

// TestStateBroadcastKey: a partition's broadcast key parses back to it,
// and keys of other shapes are refused.
func TestStateBroadcastKey(t *testing.T) {
	k := Key{TopicID: [16]byte{1, 2, 3, 15: 9}, Index: 12}
	if got, ok := parseStateBroadcastKey(stateBroadcastKey(k)); !ok || got != k {
		t.Fatalf("round trip of %v: %v %v", k, got, ok)
	}
	for _, bad := range []string{"topics", "state/", "state/xyz/1", "state/" + metadata.FormatTopicID(k.TopicID) + "/-1", "state/" + metadata.FormatTopicID(k.TopicID)} {
		if _, ok := parseStateBroadcastKey(bad); ok {
			t.Errorf("%q parsed as a state key", bad)
		}
	}
}
