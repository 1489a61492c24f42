package httpapi

// The console's cost model (agent/console/costmodel.go) over this
// agent's last minute: the history sampler (runHistory) also takes a
// snapshot of the model's counters at every point, and this agent's
// report (consoleReport) carries what they gained from the oldest
// snapshot kept to now, with the PUTs its commit settings predict for
// it. A minute, not since start: a topic written in bursts would
// otherwise be predicted at its mean rate, as if written all the time.

import (
	"slices"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/console"
)

const (
	// costWindow is how far back the recent cost reaches: the oldest
	// snapshot kept is the newest at least this old.
	costWindow = time.Minute
	// costWindowMaxSnapshots bounds the snapshots kept, whatever the
	// history's resolution.
	costWindowMaxSnapshots = 720
)

// costSnapshots are this agent's last minute of cost counters. The zero
// value is ready to use; safe for concurrent use.
type costSnapshots struct {
	mu    sync.Mutex
	snaps []console.CostSnapshot // oldest first
}

// add keeps snap and drops the snapshots the window no longer needs.
func (c *costSnapshots) add(snap console.CostSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snaps = append(c.snaps, snap)
	drop := 0
	for drop+1 < len(c.snaps) && !c.snaps[drop+1].At.After(snap.At.Add(-costWindow)) {
		drop++
	}
	drop = max(drop, len(c.snaps)-costWindowMaxSnapshots)
	c.snaps = slices.Delete(c.snaps, 0, drop)
}

// recent is what the counters gained from the oldest snapshot kept to
// now, and what settings predict for it; nil before the first snapshot.
func (c *costSnapshots) recent(settings console.CommitSettings, now console.CostSnapshot) *console.RecentCost {
	c.mu.Lock()
	snaps := append(slices.Clone(c.snaps), now)
	c.mu.Unlock()
	return settings.Recent(snaps)
}

// costCounters reads the cost model's counters from this agent's
// registry.
func (s *Server) costCounters() console.CostCounters {
	c := console.CostCounters{Diskless: map[string]console.DisklessUsage{}, ReplicaCopied: map[string]float64{}}
	visitCounters(s.registry, func(name string, labels map[string]string, v float64) {
		topic := labels["topic"]
		switch name {
		case "strata_diskless_topic_puts_total":
			u := c.Diskless[topic]
			u.Puts += v
			c.Diskless[topic] = u
		case "strata_diskless_topic_bytes_total":
			u := c.Diskless[topic]
			u.Bytes += v
			c.Diskless[topic] = u
		case "strata_replica_copied_bytes_total":
			c.ReplicaCopied[topic] += v
		}
	})
	return c
}
