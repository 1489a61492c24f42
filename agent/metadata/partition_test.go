package metadata

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestCASPartitionState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		tp, err := s.CreateTopic(ctx, "t", 1, [][]int32{{0, 1, 2}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, etag, err := s.PartitionState(ctx, tp.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.ReplicationFactor != 3 || st.WantedReplicas() != 3 {
			t.Fatalf("a new partition's replication factor is %d, want its 3 replicas", st.ReplicationFactor)
		}
		next := st
		next.Leader, next.LeaderEpoch, next.ISR, next.StateEpoch = 1, 1, []int32{1, 2}, 1
		etag2, err := s.CASPartitionState(ctx, tp.ID, 0, next, etag)
		if err != nil {
			t.Fatal(err)
		}
		if etag2 == "" || etag2 == etag {
			t.Fatalf("new etag %q after %q", etag2, etag)
		}
		// The stale etag loses, and the state stays as the winner wrote it.
		stale := st
		stale.StateEpoch = 1
		_, err = s.CASPartitionState(ctx, tp.ID, 0, stale, etag)
		if !errors.Is(err, ErrConflict) || !objstore.IsPreconditionFailed(err) {
			t.Fatalf("CAS with stale etag = %v, want ErrConflict", err)
		}
		got, etag3, err := s.PartitionState(ctx, tp.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if etag3 != etag2 || got.Leader != 1 || got.LeaderEpoch != 1 || !slices.Equal(got.ISR, []int32{1, 2}) || got.ReplicationFactor != 3 {
			t.Fatalf("state = %+v (etag %q), want the winner's (etag %q)", got, etag3, etag2)
		}
		// "" creates, and only once.
		if _, err := s.CASPartitionState(ctx, tp.ID, 0, st, ""); !errors.Is(err, ErrConflict) {
			t.Fatalf(`CAS "" over an existing state = %v, want ErrConflict`, err)
		}
		if _, err := s.CASPartitionState(ctx, tp.ID, 5, st, ""); err != nil {
			t.Fatalf(`CAS "" for a new partition: %v`, err)
		}
		if _, _, err := s.PartitionState(ctx, tp.ID, 6); !errors.Is(err, ErrUnknownPartition) {
			t.Fatalf("PartitionState(missing) = %v, want ErrUnknownPartition", err)
		}
		// Leaderless with an empty ISR round-trips.
		offline := PartitionState{Leader: -1, LeaderEpoch: 2, Replicas: []int32{0, 1, 2}, StateEpoch: 2}
		if _, err := s.CASPartitionState(ctx, tp.ID, 0, offline, etag3); err != nil {
			t.Fatal(err)
		}
		if got, _, err := s.PartitionState(ctx, tp.ID, 0); err != nil || got.Leader != -1 || got.ISR == nil || len(got.ISR) != 0 {
			t.Fatalf("offline state = %+v, %v", got, err)
		}
	})
}

// Of many writers holding one etag, exactly one wins.
func TestCASPartitionStateRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		tp, err := s.CreateTopic(ctx, "t", 1, [][]int32{{0, 1, 2, 3, 4, 5, 6, 7}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, etag, err := s.PartitionState(ctx, tp.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := []int32{}
		for i := range int32(8) {
			wg.Go(func() {
				next := st
				next.Leader, next.LeaderEpoch, next.StateEpoch = i, 1, 1
				_, err := s.CASPartitionState(ctx, tp.ID, 0, next, etag)
				if err == nil {
					mu.Lock()
					winners = append(winners, i)
					mu.Unlock()
				} else if !errors.Is(err, ErrConflict) {
					t.Errorf("writer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("winners = %v, want exactly one", winners)
		}
		got, _, err := s.PartitionState(ctx, tp.ID, 0)
		if err != nil || got.Leader != winners[0] {
			t.Fatalf("state = %+v, %v; want leader %d", got, err, winners[0])
		}
	})
}

func TestPartitionStateValidate(t *testing.T) {
	cases := []struct {
		name string
		st   PartitionState
		ok   bool
	}{
		{"normal", PartitionState{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}, true},
		{"leaderless", PartitionState{Leader: -1, Replicas: []int32{1}}, true},
		{"no replicas", PartitionState{Leader: -1}, false},
		{"dup replica", PartitionState{Leader: 1, Replicas: []int32{1, 1}, ISR: []int32{1}}, false},
		{"negative replica", PartitionState{Leader: -1, Replicas: []int32{-3}}, false},
		{"isr outside replicas", PartitionState{Leader: 1, Replicas: []int32{1}, ISR: []int32{1, 2}}, false},
		{"dup isr", PartitionState{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 1}}, false},
		{"leader outside isr", PartitionState{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{1}}, false},
		{"leader -2", PartitionState{Leader: -2, Replicas: []int32{1}}, false},
		{"negative epoch", PartitionState{Leader: 1, LeaderEpoch: -1, Replicas: []int32{1}, ISR: []int32{1}}, false},
		{"too many replicas", PartitionState{Leader: -1, Replicas: []int32{0, 1, 2, 3, 4}}, false},
	}
	for _, c := range cases {
		err := c.st.Validate(4)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidPartitionState)) {
			t.Errorf("%s: Validate = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	s := New(objstore.NewMem(), nil)
	ctx := testContext(t)
	if _, err := s.CASPartitionState(ctx, [16]byte{1}, 0, cases[2].st, ""); !errors.Is(err, ErrInvalidPartitionState) {
		t.Fatalf("CAS of an invalid state = %v", err)
	}
	if _, err := s.CASPartitionState(ctx, [16]byte{}, 0, cases[0].st, ""); err == nil {
		t.Fatal("CAS with the zero topic id succeeded")
	}
	if _, err := s.CASPartitionState(ctx, [16]byte{1}, -1, cases[0].st, ""); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("CAS of partition -1 = %v", err)
	}
}

// TestReassignmentStates walks a reassignment through its states: start
// (new replicas added), replace, completion with a leader hand-over, and
// cancel; every state passes Validate.
func TestReassignmentStates(t *testing.T) {
	st := PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, StateEpoch: 7}
	check := func(what string, got PartitionState, want PartitionState) {
		t.Helper()
		if err := got.Validate(5); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
		}
	}
	moving, err := st.Reassign([]int32{3, 2}, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("start", moving, PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, StateEpoch: 8, Target: []int32{3, 2}, Adding: []int32{3}})
	if got := moving.Removing(); !slices.Equal(got, []int32{1}) {
		t.Errorf("Removing = %v, want [1]", got)
	}
	if _, ok := moving.CompleteReassignment(); ok {
		t.Fatal("completed before the new replica is in sync")
	}
	replaced, err := moving.Reassign([]int32{4, 2}, 5)
	if err != nil {
		t.Fatal(err)
	}
	check("replace", replaced, PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2, 4}, ISR: []int32{1, 2}, StateEpoch: 9, Target: []int32{4, 2}, Adding: []int32{4}})
	synced := moving
	synced.ISR = []int32{1, 2, 3}
	done, ok := synced.CompleteReassignment()
	if !ok {
		t.Fatal("not completed with every target replica in sync")
	}
	check("complete", done, PartitionState{Leader: 3, LeaderEpoch: 5, Replicas: []int32{3, 2}, ISR: []int32{2, 3}, StateEpoch: 9})
	cancelled, err := synced.CancelReassignment()
	if err != nil {
		t.Fatal(err)
	}
	check("cancel", cancelled, PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, StateEpoch: 9})
	if back, err := moving.Reassign([]int32{1, 2}, 5); err != nil || back.Moving() {
		t.Errorf("reassigning to the original replicas: %+v, %v; want a cancel", back, err)
	}
	if _, err := st.CancelReassignment(); !errors.Is(err, ErrNoReassignment) {
		t.Errorf("cancel without a reassignment: %v", err)
	}
	for _, bad := range [][]int32{nil, {1, 1}, {-1}, {1, 2, 3, 4, 5, 6}} {
		if _, err := st.Reassign(bad, 5); err == nil {
			t.Errorf("Reassign(%v) accepted", bad)
		}
	}
}
