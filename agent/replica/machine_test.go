package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log"
)

// The agent hands its partition log to the machine as an EpochLog.
var _ EpochLog = (*log.Log)(nil)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", DefaultConfig(), true},
		{"zero lag", Config{ReplicaLagTimeMax: 0, MinInsyncReplicas: 1}, false},
		{"negative lag", Config{ReplicaLagTimeMax: -time.Second, MinInsyncReplicas: 1}, false},
		{"min isr 0", Config{ReplicaLagTimeMax: time.Second, MinInsyncReplicas: 0}, false},
		{"min isr above replicas is fine", Config{ReplicaLagTimeMax: time.Second, MinInsyncReplicas: 7}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			_, err = New(1, tc.cfg, 0)
			if (err == nil) != tc.ok {
				t.Fatalf("New() = %v, want ok=%v", err, tc.ok)
			}
			m, _ := New(1, DefaultConfig(), 0)
			if err := m.SetConfig(tc.cfg); (err == nil) != tc.ok {
				t.Fatalf("SetConfig() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if _, err := New(-1, DefaultConfig(), 0); err == nil {
		t.Fatal("New accepted a negative agent id")
	}
}

// TestCheckEpoch is Kafka's fence for every request that carries a
// current leader epoch, against a replica in epoch 5 in each role.
func TestCheckEpoch(t *testing.T) {
	leader, follower := leaderAt(t, 5), followerAt(t, 5)
	for _, tc := range []struct {
		m          *Machine
		epoch      int32
		leaderOnly bool
		want       error
	}{
		{leader, -1, true, nil},
		{leader, 5, true, nil},
		{leader, 4, true, ErrFencedLeaderEpoch},
		{leader, 0, false, ErrFencedLeaderEpoch},
		{leader, 6, true, ErrUnknownLeaderEpoch},
		{follower, 5, false, nil},
		{follower, -1, false, nil},
		{follower, 5, true, ErrNotLeader},
		{follower, -1, true, ErrNotLeader},
		{follower, 4, true, ErrFencedLeaderEpoch},
		{follower, 9, true, ErrUnknownLeaderEpoch},
	} {
		err := tc.m.CheckEpoch(tc.epoch, tc.leaderOnly)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s CheckEpoch(%d, %v) = %v, want %v", tc.m.Role(), tc.epoch, tc.leaderOnly, err, tc.want)
		}
	}
}

func leaderAt(t *testing.T, epoch int32) *Machine {
	t.Helper()
	m, err := New(1, DefaultConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.BecomeLeader(State{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, LogEnd{}, base); err != nil {
		t.Fatal(err)
	}
	return m
}

func followerAt(t *testing.T, epoch int32) *Machine {
	t.Helper()
	m, err := New(1, DefaultConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.BecomeFollower(State{Leader: 2, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, &fakeLog{}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCopiesOut checks that what the machine returns cannot change its
// state: the caller edits the proposal it is about to write.
func TestCopiesOut(t *testing.T) {
	m, _ := New(1, Config{ReplicaLagTimeMax: time.Second, MinInsyncReplicas: 1}, 0)
	st := State{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}
	if _, err := m.BecomeLeader(st, LogEnd{LEO: 10, Durable: 10}, base); err != nil {
		t.Fatal(err)
	}
	st.ISR[0], st.Replicas[1] = 9, 9
	u, err := m.FollowerFetched(2, 10, LogEnd{LEO: 10, Durable: 10}, base)
	if err != nil || u.Change == nil {
		t.Fatalf("no expansion: %+v, %v", u, err)
	}
	u.Change.To.ISR[0] = 7
	u.Change.Replicas[0] = 7
	m.State().ISR[0] = 7
	m.ISR()[0] = 7
	c, _ := m.PendingChange()
	c.From.ISR[0] = 7
	if got, _ := m.PendingChange(); got.To.ISR[0] != 1 || got.Replicas[0] != 2 || got.From.ISR[0] != 1 || m.ISR()[0] != 1 || m.State().Replicas[1] != 2 {
		t.Fatalf("machine state changed through a returned value: %+v, ISR %v", got, m.ISR())
	}
}

// TestWrongRole checks that each side's calls are refused on the other
// side and before any state, and change nothing.
func TestWrongRole(t *testing.T) {
	none, _ := New(1, DefaultConfig(), 0)
	leader, follower := leaderAt(t, 5), followerAt(t, 5)
	end, flog := LogEnd{LEO: 10, Durable: 10}, &fakeLog{leo: 10}
	leaderCalls := map[string]func(m *Machine) error{
		"FollowerFetched": func(m *Machine) error { _, err := m.FollowerFetched(2, 0, end, base); return err },
		"LeaderEndMoved":  func(m *Machine) error { _, err := m.LeaderEndMoved(end, base); return err },
		"CheckISR":        func(m *Machine) error { _, err := m.CheckISR(end, base); return err },
		"ConfirmISRChange": func(m *Machine) error {
			_, err := m.ConfirmISRChange(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}, StateEpoch: 1}, end, base)
			return err
		},
		"CheckAppend":          func(m *Machine) error { return m.CheckAppend(false) },
		"AppendStatus":         func(m *Machine) error { _, err := m.AppendStatus(5, 0); return err },
		"CheckFollowerFetch":   func(m *Machine) error { return m.CheckFollowerFetch(2, -1, 0, 0) },
		"OffsetForLeaderEpoch": func(m *Machine) error { _, err := m.OffsetForLeaderEpoch(-1, 0, flog); return err },
	}
	for name, call := range leaderCalls {
		for _, m := range []*Machine{none, follower} {
			if err := call(m); !errors.Is(err, ErrNotLeader) {
				t.Errorf("%s as %s = %v, want ErrNotLeader", name, m.Role(), err)
			}
		}
	}
	followerCalls := map[string]func(m *Machine) error{
		"EpochAnswered": func(m *Machine) error {
			_, err := m.EpochAnswered(m.FollowerAction(), EpochEndOffset{Epoch: 0, EndOffset: 0}, flog)
			return err
		},
		"Applied":         func(m *Machine) error { _, err := m.Applied(m.FollowerAction(), flog); return err },
		"Fetched":         func(m *Machine) error { _, err := m.Fetched(m.FollowerAction(), 0, flog); return err },
		"FetchOutOfRange": func(m *Machine) error { _, err := m.FetchOutOfRange(m.FollowerAction(), 0, 0, flog); return err },
	}
	for name, call := range followerCalls {
		for _, m := range []*Machine{none, leader} {
			if err := call(m); !errors.Is(err, ErrNotFollower) {
				t.Errorf("%s as %s = %v, want ErrNotFollower", name, m.Role(), err)
			}
		}
	}
	if leader.HighWatermark() != 0 || leader.Role() != RoleLeader || follower.FollowerAction().Kind != ActionTruncate {
		t.Errorf("a refused call changed state: leader HW %d, follower action %v", leader.HighWatermark(), follower.FollowerAction())
	}
}

func TestInvalidStates(t *testing.T) {
	for _, st := range []State{
		{Leader: 1, Replicas: nil, ISR: nil},
		{Leader: 1, Replicas: []int32{1, -2}, ISR: []int32{1}},
		{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 3}},
		{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 1}},
		{Leader: -2, Replicas: []int32{1, 2}, ISR: []int32{1}},
		{Leader: 1, LeaderEpoch: -1, Replicas: []int32{1}, ISR: []int32{1}},
		{Leader: 1, StateEpoch: -1, Replicas: []int32{1}, ISR: []int32{1}},
		{Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2}}, // BecomeLeader for another agent
	} {
		m, _ := New(1, DefaultConfig(), 0)
		if _, err := m.BecomeLeader(st, LogEnd{}, base); !errors.Is(err, ErrInvalidState) {
			t.Errorf("BecomeLeader(%+v) = %v, want ErrInvalidState", st, err)
		}
		if m.Role() != RoleNone {
			t.Errorf("BecomeLeader(%+v) changed the role to %s", st, m.Role())
		}
	}
}

// racingLog records epoch 5 at 100 right after its first answer, as an
// append landing between the machine's two reads of the log.
type racingLog struct{ fakeLog }

func (l *racingLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	e, o := l.fakeLog.EndOffsetForEpoch(epoch)
	l.append(120, 5)
	return e, o
}

func TestOffsetForLeaderEpochRacingAppend(t *testing.T) {
	m, _ := New(1, DefaultConfig(), 0)
	l := &racingLog{fakeLog{leo: 100, durable: 100, epochs: []fakeEpoch{{1, 0}}}}
	if _, err := m.BecomeLeader(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1}, ISR: []int32{1}}, l.end(), base); err != nil {
		t.Fatal(err)
	}
	got, err := m.OffsetForLeaderEpoch(5, 5, l)
	if want := (EpochEndOffset{Epoch: 5, EndOffset: 120}); err != nil || got != want {
		t.Fatalf("OffsetForLeaderEpoch = %+v, %v; want %+v", got, err, want)
	}
}

// TestEpochAnsweredUnknownOwnEpoch: when the follower's log cannot place
// the leader's epoch at all (its epochs are gone by the time the answer
// comes), it truncates to the leader's end offset, as Kafka's None case.
func TestEpochAnsweredUnknownOwnEpoch(t *testing.T) {
	m, _ := New(2, DefaultConfig(), 0)
	l := &fakeLog{leo: 90, durable: 90, epochs: []fakeEpoch{{3, 0}}}
	a, err := m.BecomeFollower(State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, l)
	if err != nil || a.Kind != ActionQueryEpoch {
		t.Fatalf("BecomeFollower = %v, %v", a, err)
	}
	l.epochs = nil
	a, err = m.EpochAnswered(a, EpochEndOffset{Epoch: 2, EndOffset: 70}, l)
	if err != nil || a.Kind != ActionTruncate || a.Offset != 70 {
		t.Fatalf("EpochAnswered = %v, %v; want truncate at 70", a, err)
	}
}

// TestAppliedWithoutProgress: if an intermediate truncation left the
// latest epoch in place (a log that did not cut), asking about it again
// would loop; the follower fetches from its end instead.
func TestAppliedWithoutProgress(t *testing.T) {
	m, _ := New(2, DefaultConfig(), 0)
	l := &fakeLog{leo: 60, durable: 60, epochs: []fakeEpoch{{1, 0}, {3, 40}}}
	a, err := m.BecomeFollower(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, l)
	if err != nil || a.Kind != ActionQueryEpoch || a.Epoch != 3 {
		t.Fatalf("BecomeFollower = %v, %v", a, err)
	}
	a, err = m.EpochAnswered(a, EpochEndOffset{Epoch: 2, EndOffset: 70}, l)
	if err != nil || a.Kind != ActionTruncate || a.Offset != 40 {
		t.Fatalf("EpochAnswered = %v, %v; want an intermediate truncation at 40", a, err)
	}
	a, err = m.Applied(a, l) // the log did not cut
	if err != nil || a.Kind != ActionFetch || a.Offset != 60 {
		t.Fatalf("Applied = %v, %v; want fetch at 60", a, err)
	}
}
