package replica

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLeaderInvariants drives a leader with random appends, fetches, ISR
// checks and CAS outcomes, and checks after every step what acks=all
// relies on: the HW never moves back or past the durable end, advances
// only with enough replicas in sync, and never passes an ISR member's
// LEO; the leader stays in every ISR; one change at a time. Each seed is
// a fixed, reproducible run.
func TestLeaderInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		if !leaderInvariants(t, seed) {
			t.Fatalf("failed with seed %d", seed)
		}
	}
}

func leaderInvariants(t *testing.T, seed uint64) bool {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	n := 2 + rng.IntN(4)
	replicas := make([]int32, n)
	for i := range replicas {
		replicas[i] = int32(i + 1)
	}
	isr := []int32{1}
	for _, r := range replicas[1:] {
		if rng.IntN(2) == 0 {
			isr = append(isr, r)
		}
	}
	minISR := 1 + rng.IntN(n)
	m, err := New(1, Config{ReplicaLagTimeMax: time.Second, MinInsyncReplicas: minISR}, 0)
	if err != nil {
		t.Fatal(err)
	}
	now, end := base, LogEnd{}
	// logs holds each follower's true log end; fetches report it.
	logs := map[int32]int64{}
	u, err := m.BecomeLeader(State{Leader: 1, Replicas: replicas, ISR: isr}, end, now)
	if err != nil {
		t.Fatal(err)
	}
	hw := u.HW
	for step := range 400 {
		now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
		hadPending := m.pending != nil
		var what string
		switch rng.IntN(6) {
		case 0:
			what = "append"
			end.LEO += rng.Int64N(10)
			end.Durable = max(end.Durable, end.LEO-rng.Int64N(5))
			u, err = m.LeaderEndMoved(end, now)
		case 1, 2:
			id := replicas[1+rng.IntN(n-1)]
			what = "fetch"
			if rng.IntN(4) > 0 { // else it fetches again from where it was
				logs[id] += rng.Int64N(end.LEO - logs[id] + 1)
			}
			u, err = m.FollowerFetched(id, logs[id], end, now)
		case 3:
			what = "check-isr"
			u, err = m.CheckISR(end, now)
		default:
			c, ok := m.PendingChange()
			if !ok {
				continue
			}
			if rng.IntN(3) == 0 {
				what = "abort"
				m.AbortISRChange()
				u = LeaderUpdate{HW: m.HighWatermark()}
			} else {
				what = "confirm"
				u, err = m.ConfirmISRChange(c.To, end, now)
			}
		}
		fail := func(format string, args ...any) bool {
			t.Helper()
			t.Errorf("seed %d step %d %s: "+format, append([]any{seed, step, what}, args...)...)
			return false
		}
		if err != nil {
			return fail("%v", err)
		}
		if u.HW != m.HighWatermark() || u.HW < hw || u.Advanced != (u.HW > hw) {
			return fail("HW %d -> %d (advanced %v), machine says %d", hw, u.HW, u.Advanced, m.HighWatermark())
		}
		if u.HW > end.Durable {
			return fail("HW %d past the durable end %d", u.HW, end.Durable)
		}
		if u.Advanced && len(m.ISR()) < min(minISR, n) {
			return fail("HW advanced with ISR %v below min.insync.replicas %d", m.ISR(), minISR)
		}
		if hw = u.HW; hw > 0 {
			for _, f := range m.Followers() {
				if slices.Contains(m.MaximalISR(), f.Replica) && f.LEO < hw {
					return fail("HW %d past ISR member %d at %d", hw, f.Replica, f.LEO)
				}
			}
		}
		if !slices.Contains(m.ISR(), 1) {
			return fail("leader left the ISR %v", m.ISR())
		}
		if c, ok := m.PendingChange(); ok && !slices.Contains(c.To.ISR, 1) {
			return fail("proposal %v drops the leader", c.To.ISR)
		}
		if u.Change != nil && hadPending {
			return fail("second proposal %+v while one is in flight", *u.Change)
		}
		if (m.CheckAppend(true) == nil) != (len(m.ISR()) >= min(minISR, n)) {
			return fail("CheckAppend(acks=all) with ISR %v, min %d", m.ISR(), minISR)
		}
		if done, err := m.AppendStatus(0, hw); hw > 0 && (!done || (err == nil) != (len(m.MaximalISR()) >= min(minISR, n))) {
			return fail("AppendStatus(%d) = %v, %v with maximal ISR %v", hw, done, err, m.MaximalISR())
		}
	}
	return true
}

// TestTruncationFindsDivergence builds two replicas' histories the way
// leaders make them: each epoch one leader appends, and the other copies a
// prefix of its log after cutting to where they agree. Then one leads a
// new epoch and the other follows it through OffsetForLeaderEpoch, both
// sides driven by machines. With one leader per epoch, logs that hold the
// same epoch at an offset agree up to it, and the follower must end
// exactly at the longest common prefix: never above (it would keep
// records the leader lacks), never below (it would drop committed ones).
func TestTruncationFindsDivergence(t *testing.T) {
	for seed := uint64(1); seed <= 1000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var logs [2][]int32 // each offset's epoch
		epochs := 1 + rng.IntN(8)
		for e := int32(1); e <= int32(epochs); e++ {
			x := rng.IntN(2)
			for range rng.IntN(4) {
				logs[x] = append(logs[x], e)
			}
			if y := 1 - x; rng.IntN(2) == 0 {
				p := commonPrefix(logs[x], logs[y])
				logs[y] = append(logs[y][:p], logs[x][p:p+rng.IntN(len(logs[x])-p+1)]...)
			}
		}
		want := commonPrefix(logs[0], logs[1])
		leaderLog, followerLog := logFrom(logs[0]), logFrom(logs[1])
		replicas := []int32{1, 2}
		st := State{Leader: 1, LeaderEpoch: int32(epochs) + 1, Replicas: replicas, ISR: replicas}

		leader, _ := New(1, DefaultConfig(), 0)
		if _, err := leader.BecomeLeader(st, leaderLog.end(), base); err != nil {
			t.Fatal(err)
		}
		follower, _ := New(2, DefaultConfig(), 0)
		a, err := follower.BecomeFollower(st, followerLog)
		for range epochs + 3 {
			if err != nil || a.Kind == ActionFetch {
				break
			}
			switch a.Kind {
			case ActionQueryEpoch:
				var ans EpochEndOffset
				if ans, err = leader.OffsetForLeaderEpoch(a.LeaderEpoch, a.Epoch, leaderLog); err == nil {
					a, err = follower.EpochAnswered(a, ans, followerLog)
				}
			case ActionTruncate:
				followerLog.truncate(a.Offset)
				a, err = follower.Applied(a, followerLog)
			default:
				t.Fatalf("seed %d: unexpected action %v", seed, a)
			}
		}
		if err != nil || a.Kind != ActionFetch || a.Offset != int64(want) || followerLog.leo != int64(want) {
			t.Fatalf("seed %d: leader %v, follower %v: ended at %v (log end %d), %v; want fetch at %d",
				seed, logs[0], logs[1], a, followerLog.leo, err, want)
		}
	}
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func logFrom(epochs []int32) *fakeLog {
	l := &fakeLog{}
	for _, e := range epochs {
		l.append(l.leo+1, e)
	}
	return l
}
