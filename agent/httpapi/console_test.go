package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/console"
)

func TestDialableHTTP(t *testing.T) {
	for _, tc := range []struct{ http, kafka, want string }{
		{"127.0.0.1:9644", "localhost:9092", "127.0.0.1:9644"},
		{"[::]:9644", "agent-1.example:9092", "agent-1.example:9644"},
		{"0.0.0.0:9644", "10.0.0.3:9092", "10.0.0.3:9644"},
		{":9644", "10.0.0.3:9092", "10.0.0.3:9644"},
		{"", "10.0.0.3:9092", ""},
	} {
		if got := dialableHTTP(tc.http, tc.kafka); got != tc.want {
			t.Errorf("dialableHTTP(%q, %q) = %q, want %q", tc.http, tc.kafka, got, tc.want)
		}
	}
}

// TestConsoleGateWaitsBounded: while a gathering runs, another request
// waits for it only as long as its own context allows.
func TestConsoleGateWaitsBounded(t *testing.T) {
	var g consoleGate
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan *consoleGathering)
	go func() {
		g, _ := g.get(context.Background(), func(context.Context) *consoleGathering {
			close(inside)
			<-release
			return &consoleGathering{view: console.View{ServedBy: 1}}
		})
		done <- g
	}()
	<-inside
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.get(ctx, func(context.Context) *consoleGathering { return &consoleGathering{view: console.View{ServedBy: 2}} }); err == nil {
		t.Error("a request whose context ended got an answer while another gathering held the gate")
	}
	close(release)
	if got := <-done; got == nil || got.view.ServedBy != 1 {
		t.Errorf("the first gathering answered %+v", got)
	}
}

// TestConsoleReportCostCounters: an agent's report carries what the
// console's cost model sums over agents: its diskless commit settings,
// its commit objects' shares by topic and its followers' copies by topic,
// read from its own counters.
func TestConsoleReportCostCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	puts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_topic_puts_total"}, []string{"topic"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_topic_bytes_total"}, []string{"topic"})
	copied := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_replica_copied_bytes_total"}, []string{"topic"})
	reg.MustRegister(puts, bytes, copied)
	puts.WithLabelValues("dl").Add(2.75)
	bytes.WithLabelValues("dl").Add(4096)
	copied.WithLabelValues("t").Add(1000)
	commit := console.CommitSettings{IntervalSeconds: 0.25, Bytes: 8 << 20}
	s := newTestServer(t, Config{DisklessCommit: commit}, reg)

	l := s.consoleReport()
	if l.DisklessCommit != commit {
		t.Errorf("commit settings %+v, want %+v", l.DisklessCommit, commit)
	}
	if u := l.Cost.Diskless["dl"]; u != (console.DisklessUsage{Puts: 2.75, Bytes: 4096}) || len(l.Cost.Diskless) != 1 {
		t.Errorf("diskless topics %+v, want dl's 2.75 PUTs and 4096 bytes", l.Cost.Diskless)
	}
	if l.Cost.ReplicaCopied["t"] != 1000 || len(l.Cost.ReplicaCopied) != 1 {
		t.Errorf("replica copies %+v, want t's 1000 bytes", l.Cost.ReplicaCopied)
	}
	if l.RecentCost != nil {
		t.Errorf("a recent window %+v before the first snapshot", l.RecentCost)
	}

	// A snapshot, then more bytes: the report's window holds the change.
	s.costs.add(console.CostSnapshot{At: time.Now().Add(-10 * time.Second), CostCounters: s.costCounters()})
	bytes.WithLabelValues("dl").Add(1 << 20)
	puts.WithLabelValues("dl").Add(4)
	l = s.consoleReport()
	if r := l.RecentCost; r == nil || r.Seconds < 10 || r.Counters.Diskless["dl"] != (console.DisklessUsage{Puts: 4, Bytes: 1 << 20}) ||
		r.PredictedPuts["dl"] <= 0 {
		t.Errorf("recent window %+v, want dl's 4 PUTs and 1 MiB with a prediction", r)
	}
}

// TestCostSnapshotsKeepAMinute: the window keeps the newest snapshot at
// least a minute old and those after it.
func TestCostSnapshotsKeepAMinute(t *testing.T) {
	var c costSnapshots
	at := time.Unix(1_700_000_000, 0)
	for i := range 30 { // every 5 s for 145 s
		c.add(console.CostSnapshot{At: at.Add(time.Duration(5*i) * time.Second)})
	}
	first, last := c.snaps[0].At.Sub(at), c.snaps[len(c.snaps)-1].At.Sub(at)
	if first != 85*time.Second || last != 145*time.Second || len(c.snaps) != 13 {
		t.Errorf("kept %d snapshots from %v to %v; want 13 from 85s to 145s", len(c.snaps), first, last)
	}
}
