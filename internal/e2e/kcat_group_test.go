package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/testagent"
)

// Bounds for the kcat group members.
const (
	kcatJoinLimit = 60 * time.Second // one member joining until the group settles
	kcatStopLimit = 5 * time.Second  // SIGTERM to exit, before SIGKILL
)

// TestKcatGroupSharesSevenPartitions: librdkafka's balanced consumer (kcat
// -G, classic protocol, its default range,roundrobin assignors) shares a
// 7-partition topic among members c0..c7 that join one by one. After each
// join every partition has exactly one owner, the owners' partition counts
// differ by at most one, and only with 8 members does one (exactly one) own
// nothing. The assignment is computed by the elected librdkafka leader and
// stored by Strata, so this checks Strata's JoinGroup/SyncGroup round trip
// with a client other than franz-go (agent's
// TestGroupMembersShareSevenPartitions is the franz-go version).
func TestKcatGroupSharesSevenPartitions(t *testing.T) {
	kcat := kcatPath(t)
	a := testagent.Start(t, testagent.Options{ExtraArgs: groupAgentArgs})
	const topic, group, partitions = "kcat-seven", "kcat-seven-g", 7
	adm := newAdmin(t, a.Addr())
	createTopic(t, adm, topic, partitions, nil)
	// Something to read; the assertion is about ownership only.
	produceN(t, a.Addr(), topic, partitions, 3)

	members := newKcatMembers(t)
	for n := 1; n <= partitions+1; n++ {
		members.start(t, kcat,
			"-b", a.Addr(), "-G", group, "-q", "-o", "beginning",
			// Quick failure detection and rebalance notice, as in
			// groupAgentArgs.
			"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=200",
			"-X", fmt.Sprintf("client.id=c%d", n-1),
			"-f", "%p %s\n", topic)
		began := time.Now()
		counts := members.waitAssigned(t, adm, group, topic, partitions, n)
		t.Logf("%d members: partition counts %v, settled in %v", n, counts, time.Since(began).Round(time.Millisecond))
		if lo, hi := slices.Min(counts), slices.Max(counts); hi-lo > 1 {
			t.Errorf("%d members: partition counts %v differ by more than one", n, counts)
		}
		idle := 0
		for _, c := range counts {
			if c == 0 {
				idle++
			}
		}
		if want := max(0, n-partitions); idle != want {
			t.Errorf("%d members: %d own nothing, want %d (counts %v)", n, idle, want, counts)
		}
	}
}

// kcatMembers are long-running kcat -G processes, stopped together when the
// test ends.
type kcatMembers struct {
	procs []*kcatMember
}

type kcatMember struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed once cmd.Wait returned; err is then set
	err    error
}

// lockedBuffer is a bytes.Buffer that the process's copy goroutine writes
// while the test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newKcatMembers registers one cleanup for all members: SIGTERM to every one
// first, then the waits, so that the members leave the group in parallel
// rather than each one's leave setting off a rebalance the next waits for.
func newKcatMembers(t *testing.T) *kcatMembers {
	ms := &kcatMembers{}
	t.Cleanup(func() {
		for _, m := range ms.procs {
			select {
			case <-m.done:
			default:
				_ = m.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		deadline := time.After(kcatStopLimit)
		for i, m := range ms.procs {
			select {
			case <-m.done:
			case <-deadline:
				// Only our own child, by PID.
				_ = m.cmd.Process.Kill()
				<-m.done
				t.Logf("kcat member c%d (pid %d) did not exit on SIGTERM within %v; killed", i, m.cmd.Process.Pid, kcatStopLimit)
			}
			if t.Failed() {
				t.Logf("kcat member c%d: exit %v; stderr:\n%s", i, m.err, m.stderr.String())
			}
		}
	})
	return ms
}

// start runs one kcat process with args and leaves it running.
func (ms *kcatMembers) start(t *testing.T, kcat string, args ...string) {
	t.Helper()
	m := &kcatMember{stderr: &lockedBuffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(kcat, args...)
	m.cmd.Stdout = nil // discarded: the records are not what this test checks
	m.cmd.Stderr = m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start kcat: %v", err)
	}
	ms.procs = append(ms.procs, m)
	go func() {
		m.err = m.cmd.Wait()
		close(m.done)
	}()
}

// exited describes the first member that is no longer running, or "".
func (ms *kcatMembers) exited() string {
	for i, m := range ms.procs {
		select {
		case <-m.done:
			return fmt.Sprintf("kcat member c%d exited (%v); stderr:\n%s", i, m.err, m.stderr.String())
		default:
		}
	}
	return ""
}

// waitAssigned waits until the group is Stable with exactly the members
// started so far, each partition owned once, and returns the members'
// partition counts. It fails the test with the last problem seen after
// kcatJoinLimit, or at once if a kcat process has exited.
func (ms *kcatMembers) waitAssigned(t *testing.T, adm *kadm.Client, group, topic string, partitions, members int) []int {
	t.Helper()
	deadline := time.Now().Add(kcatJoinLimit)
	var last string
	for time.Now().Before(deadline) {
		if msg := ms.exited(); msg != "" {
			t.Fatal(msg)
		}
		counts, problem := kcatGroupCounts(adm, group, topic, partitions, members)
		if problem == "" {
			return counts
		}
		last = problem
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("group %s never settled with %d kcat members over %d partitions within %v: %s", group, members, partitions, kcatJoinLimit, last)
	return nil
}

// kcatGroupCounts describes group and returns each member's partition
// count, or a problem: not Stable, not exactly members members (with client
// IDs c0..c<members-1>, so they are the kcat processes), or a partition
// owned other than once.
func kcatGroupCounts(adm *kadm.Client, group, topic string, partitions, members int) ([]int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, err.Error()
	}
	g := described[group]
	if g.Err != nil {
		return nil, g.Err.Error()
	}
	if g.State != "Stable" || len(g.Members) != members {
		return nil, fmt.Sprintf("state %s with %d members", g.State, len(g.Members))
	}
	var clients []string
	for _, m := range g.Members {
		clients = append(clients, m.ClientID)
	}
	slices.Sort(clients)
	for i, c := range clients {
		if want := fmt.Sprintf("c%d", i); c != want {
			return nil, fmt.Sprintf("member client IDs %v, want c0..c%d", clients, members-1)
		}
	}
	owners := make([]int, partitions)
	var counts []int
	for _, m := range g.Members {
		assigned, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, fmt.Sprintf("member %s: assignment is not a consumer assignment", m.ClientID)
		}
		n := 0
		for _, tp := range assigned.Topics {
			if tp.Topic != topic {
				return nil, fmt.Sprintf("member %s: assignment names topic %q", m.ClientID, tp.Topic)
			}
			for _, p := range tp.Partitions {
				if p < 0 || int(p) >= partitions {
					return nil, fmt.Sprintf("member %s: assigned partition %d of a %d-partition topic", m.ClientID, p, partitions)
				}
				owners[p]++
				n++
			}
		}
		counts = append(counts, n)
	}
	for p, o := range owners {
		if o != 1 {
			return nil, fmt.Sprintf("partition %d has %d owners (counts %v)", p, o, counts)
		}
	}
	return counts, ""
}
