package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scenarios in testdata/*.txt are scripts of commands, each followed
// by "----" and the output it must produce, then a blank line:
//
//	fetch replica=2 offset=100 at=1000
//	----
//	hw=100 advanced
//
// Lines starting with # between commands are comments. Times are "at=" in
// milliseconds from an arbitrary base and never go back. The commands are
// the methods of Machine, run against a fakeLog for this replica's own
// log; see run below for the arguments.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

type step struct {
	line int
	cmd  string
	args map[string]string
	want string
}

func parseScript(t *testing.T, file string) []step {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var steps []step
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(l)
		s := step{line: i + 1, cmd: fields[0], args: map[string]string{}}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			s.args[k] = v
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			t.Fatalf("%s:%d: command without ---- line", file, i+1)
		}
		var want []string
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, strings.TrimRight(lines[i], " "))
		}
		s.want = strings.Join(want, "\n")
		steps = append(steps, s)
	}
	return steps
}

type runner struct {
	t          *testing.T
	s          step
	m          *Machine
	log        *fakeLog
	now        time.Time
	remembered FollowerAction
}

func runScript(t *testing.T, file string) {
	r := &runner{t: t, log: &fakeLog{}, now: base}
	for _, s := range parseScript(t, file) {
		r.s = s
		if got := r.run(); got != s.want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, s.line, s.cmd, got, s.want)
		}
	}
}

func (r *runner) fail(format string, args ...any) {
	r.t.Fatalf("line %d: %s: %s", r.s.line, r.s.cmd, fmt.Sprintf(format, args...))
}

func (r *runner) has(k string) bool { _, ok := r.s.args[k]; return ok }

func (r *runner) int(k string, def int64) int64 {
	v, ok := r.s.args[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail("%s=%q: %v", k, v, err)
	}
	return n
}

func (r *runner) need(k string) int64 {
	if !r.has(k) {
		r.fail("missing %s=", k)
	}
	return r.int(k, 0)
}

func (r *runner) list(k string) []int32 {
	out := []int32{}
	for _, f := range strings.Split(r.s.args[k], ",") {
		if f != "" {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				r.fail("%s: %v", k, err)
			}
			out = append(out, int32(n))
		}
	}
	return out
}

// at advances the clock when the step names a time.
func (r *runner) at() time.Time {
	if r.has("at") {
		now := base.Add(time.Duration(r.int("at", 0)) * time.Millisecond)
		if now.Before(r.now) {
			r.fail("time goes back")
		}
		r.now = now
	}
	return r.now
}

func (r *runner) state(leader int32) State {
	return State{Leader: leader, LeaderEpoch: int32(r.need("epoch")), Replicas: r.list("replicas"),
		ISR: r.list("isr"), StateEpoch: int32(r.need("version"))}
}

// action is the follower action a result reports on: the current one, or
// the one saved by "remember" with use=remembered.
func (r *runner) action() FollowerAction {
	if r.s.args["use"] == "remembered" {
		return r.remembered
	}
	return r.m.FollowerAction()
}

func (r *runner) run() string {
	m, log := r.m, r.log
	switch r.s.cmd {
	case "new":
		cfg := Config{ReplicaLagTimeMax: time.Duration(r.int("lag", 10000)) * time.Millisecond, MinInsyncReplicas: int(r.int("min-isr", 1))}
		var err error
		r.now = base
		r.m, err = New(int32(r.need("self")), cfg, r.int("hw", 0))
		return result(err)
	case "config":
		cfg := Config{ReplicaLagTimeMax: time.Duration(r.int("lag", 10000)) * time.Millisecond, MinInsyncReplicas: int(r.int("min-isr", 1))}
		return result(m.SetConfig(cfg))
	case "ineligible":
		m.SetIneligible(r.list("agents"))
		return "ok"
	case "log":
		*log = fakeLog{start: r.int("start", 0)}
		log.leo, log.durable = log.start, log.start
		for _, f := range strings.Split(r.s.args["epochs"], ",") {
			if f == "" {
				continue
			}
			e, s, _ := strings.Cut(f, "@")
			epoch, err1 := strconv.ParseInt(e, 10, 32)
			start, err2 := strconv.ParseInt(s, 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				r.fail("epochs: %v", err)
			}
			log.epochs = append(log.epochs, fakeEpoch{int32(epoch), start})
		}
		log.leo = r.int("leo", log.start)
		log.durable = r.int("durable", log.leo)
		return log.String()

	// Leader side.
	case "leader":
		u, err := m.BecomeLeader(r.state(m.self), log.end(), r.at())
		return leaderResult(u, err)
	case "append":
		// The leader appends in its epoch up to leo=, durable up to
		// durable= (default: all of it).
		log.append(r.need("leo"), m.LeaderEpoch())
		log.durable = r.int("durable", log.leo)
		u, err := m.LeaderEndMoved(log.end(), r.at())
		return leaderResult(u, err)
	case "fetch":
		u, err := m.FollowerFetched(int32(r.need("replica")), r.need("offset"), log.end(), r.at())
		return leaderResult(u, err)
	case "check-fetch":
		return result(m.CheckFollowerFetch(int32(r.need("replica")), int32(r.need("epoch")), r.need("offset"), r.need("local-start")))
	case "link-lost":
		m.FollowerLinkLost(int32(r.need("replica")), r.at())
		return "ok"
	case "check-isr":
		u, err := m.CheckISR(log.end(), r.at())
		return leaderResult(u, err)
	case "confirm":
		// Confirm the pending change's To, or with version= an explicit
		// state (one that is not the outcome).
		c, _ := m.PendingChange()
		written := c.To
		if r.has("version") {
			written = r.state(m.self)
		}
		u, err := m.ConfirmISRChange(written, log.end(), r.at())
		return leaderResult(u, err)
	case "abort":
		m.AbortISRChange()
		return "ok"
	case "can-append":
		return result(m.CheckAppend(r.s.args["acks"] == "all"))
	case "ack":
		done, err := m.AppendStatus(int32(r.need("epoch")), r.need("end"))
		switch {
		case !done:
			return "wait"
		case err == nil:
			return "committed"
		}
		return result(err)
	case "offset-for-epoch":
		ans, err := m.OffsetForLeaderEpoch(int32(r.need("current")), int32(r.need("epoch")), log)
		if err != nil {
			return result(err)
		}
		return fmt.Sprintf("epoch=%d end=%d", ans.Epoch, ans.EndOffset)

	// Both.
	case "check-epoch":
		return result(m.CheckEpoch(int32(r.need("epoch")), r.has("leader-only")))
	case "status":
		return r.status()

	// Follower side.
	case "follower":
		a, err := m.BecomeFollower(r.state(int32(r.need("leader"))), log)
		return followerResult(a, err)
	case "remember":
		r.remembered = m.FollowerAction()
		return r.remembered.String()
	case "answer":
		a, err := m.EpochAnswered(r.action(), EpochEndOffset{Epoch: int32(r.need("epoch")), EndOffset: r.need("end")}, log)
		return followerResult(a, err)
	case "apply":
		// Carry out the action on the log, as a fetcher does: only while
		// it is current (checked under the lock state changes take).
		// cut= makes the log cut lower, as at the start of the batch
		// holding the offset.
		a := r.action()
		switch {
		case a != m.FollowerAction():
		case a.Kind == ActionTruncate:
			log.truncate(min(a.Offset, r.int("cut", a.Offset)))
		case a.Kind == ActionRestartAt:
			log.restart(a.Offset)
		}
		next, err := m.Applied(a, log)
		return log.String() + "\n" + followerResult(next, err)
	case "fetched":
		// The fetch brought records up to leo= in epoch= (if given).
		a := r.action()
		if r.has("leo") {
			log.append(r.need("leo"), int32(r.need("epoch")))
		}
		next, err := m.Fetched(a, r.need("hw"), log)
		return followerResult(next, err) + fmt.Sprintf("\nhw=%d", m.HighWatermark())
	case "out-of-range":
		a, err := m.FetchOutOfRange(r.action(), r.need("local-start"), r.need("end"), log)
		return followerResult(a, err)
	}
	r.fail("unknown command")
	return ""
}

func (r *runner) status() string {
	m := r.m
	var b strings.Builder
	fmt.Fprintf(&b, "%s epoch=%d version=%d hw=%d isr=%v", m.Role(), m.LeaderEpoch(), m.State().StateEpoch, m.HighWatermark(), m.ISR())
	if m.Role() == RoleLeader {
		fmt.Fprintf(&b, " maximal=%v epoch-start=%d", m.MaximalISR(), m.EpochStartOffset())
		if m.UnderMinISR() {
			b.WriteString(" under-min-isr")
		}
		if c, ok := m.PendingChange(); ok {
			fmt.Fprintf(&b, "\npending %s", change(&c))
		}
		for _, f := range m.Followers() {
			fmt.Fprintf(&b, "\nfollower %d leo=%d", f.Replica, f.LEO)
			if f.InISR {
				b.WriteString(" in-isr")
			}
			fmt.Fprintf(&b, " caught-up=%s fetch=%s", ms(f.LastCaughtUp), ms(f.LastFetch))
		}
	} else {
		fmt.Fprintf(&b, "\n%v", m.FollowerAction())
	}
	return b.String()
}

func ms(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return strconv.FormatInt(t.Sub(base).Milliseconds(), 10)
}

func change(c *ISRChange) string {
	return fmt.Sprintf("%s %v: isr %v -> %v, version %d -> %d", c.Op, c.Replicas, c.From.ISR, c.To.ISR, c.From.StateEpoch, c.To.StateEpoch)
}

func leaderResult(u LeaderUpdate, err error) string {
	if err != nil {
		return result(err)
	}
	s := fmt.Sprintf("hw=%d", u.HW)
	if u.Advanced {
		s += " advanced"
	}
	if u.Change != nil {
		s += "\npropose " + change(u.Change)
	}
	return s
}

func followerResult(a FollowerAction, err error) string {
	if err != nil {
		return result(err)
	}
	return a.String()
}

var sentinels = []struct {
	name string
	err  error
}{
	{"ErrNotLeader", ErrNotLeader},
	{"ErrNotFollower", ErrNotFollower},
	{"ErrFencedLeaderEpoch", ErrFencedLeaderEpoch},
	{"ErrUnknownLeaderEpoch", ErrUnknownLeaderEpoch},
	{"ErrNotEnoughReplicas", ErrNotEnoughReplicas},
	{"ErrNotEnoughReplicasAfterAppend", ErrNotEnoughReplicasAfterAppend},
	{"ErrNotReplica", ErrNotReplica},
	{"ErrBelowLocalStart", ErrBelowLocalStart},
	{"ErrStaleState", ErrStaleState},
	{"ErrInvalidState", ErrInvalidState},
	{"ErrNoPendingChange", ErrNoPendingChange},
	{"ErrStaleAction", ErrStaleAction},
	{"ErrInvalidEpochAnswer", ErrInvalidEpochAnswer},
	{"ErrInvalidConfig", ErrInvalidConfig},
}

// result names the sentinel an error wraps, so that scripts do not depend
// on message wording.
func result(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return "error " + s.name
		}
	}
	return "error " + err.Error()
}
