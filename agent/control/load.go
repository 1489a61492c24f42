package control

// Loads for the balancer (docs/design.md §8, issue 31): with
// --rebalance-by load, every agent writes its replicas' moving averages
// (agent/loadstat) to loads/<id>.json, and the lease holder reads them to
// give each partition its Load for placement.PlaceByLoad.
//
// Why the store: gossip's node meta is capped at 512 bytes and a
// broadcast at one UDP packet, while a report lists every replica; the
// balancer cannot ask the agents over HTTP, whose port may require
// credentials it does not have; and every agent already reads and writes
// the store. The cost is a PUT per agent per write. An agent checks every
// --load-report-interval (30 s) and writes only when a replica was added,
// dropped or changed role, or a rate or size moved by more than 10% (and
// a floor), and at least every loadReportMaxSilence: a steady agent
// writes about 9,000 times a month, a busy one at most 86,400 (about
// $0.04 and $0.43 at S3's PUT price); an agent alone writes nothing. The
// holder reads a report again only once it is older than the interval.
//
// A partition's load is what its leader measured: bytes in (produced),
// out to consumers, and the local log's size. Followers measure bytes in
// too (their copies) and stand in when no leader reported. A leader's
// bytes out become its consumers' only a while after it took over, and a
// replica that has just copied a partition's tail measured the copy as
// bytes in; so a report counts as settled once its replica has had its
// role for loadSettled, and the holder remembers the last settled load of
// each partition (for loadMemory) and prefers it to an unsettled one. A
// partition nobody reported weighs the mean of its topic's reported ones
// (or nothing): a joining agent's first report is not yet written when
// the balancer first plans for it.

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/loadstat"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/placement"
)

const (
	// loadReportMaxSilence is the longest an agent goes without
	// rewriting its report.
	loadReportMaxSilence = 5 * time.Minute
	// loadSettled is how long a replica must have had its role before its
	// rates stand for the partition's: three time constants of the
	// moving average leave 5% of what came before.
	loadSettled = 3 * loadstat.TimeConstant
	// loadMemory is how long the balancer keeps a partition's last
	// settled load when no report lists it any more.
	loadMemory = 10 * time.Minute
	// A rate (bytes per second) or a size (bytes) has changed enough to
	// rewrite the report once it moved by loadChangeFraction and by the
	// floor.
	loadChangeFraction = 0.10
	loadChangeRate     = 16 << 10
	loadChangeBytes    = 64 << 20
)

// loadReportLoop writes this agent's load report (loadReport) every
// LoadReportInterval until stop ends.
func (c *Controller) loadReportLoop(stop context.Context) {
	t := time.NewTicker(c.cfg.LoadReportInterval)
	defer t.Stop()
	var last *metadata.AgentLoad
	for {
		select {
		case <-stop.Done():
			return
		case now := <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.LoadReportInterval)
			last = c.writeLoadReport(ctx, last, now)
			cancel()
		}
	}
}

// writeLoadReport writes this agent's report if it changed enough since
// last (the file comment) and returns the report written last.
func (c *Controller) writeLoadReport(ctx context.Context, last *metadata.AgentLoad, now time.Time) *metadata.AgentLoad {
	if !c.hasPeers() {
		return last // alone: nobody reads it
	}
	next := c.localLoad(now)
	if last != nil && now.Sub(last.WrittenAt) < loadReportMaxSilence && !loadChanged(*last, next) {
		return last
	}
	if err := c.store.PutAgentLoad(ctx, next); err != nil {
		c.logger.Warn("write load report", "err", err)
		return last
	}
	return &next
}

// localLoad is this agent's report as of now: every local replica, the
// busiest first when there are more than a report holds.
func (c *Controller) localLoad(now time.Time) metadata.AgentLoad {
	l := metadata.AgentLoad{AgentID: c.id, WrittenAt: now}
	for _, p := range c.host.Partitions() {
		r := p.Load(now)
		l.Partitions = append(l.Partitions, metadata.PartitionLoad{TopicID: p.TopicID(), Partition: p.Index(), Leader: r.Leader,
			RoleAge: r.RoleAge, BytesIn: r.BytesIn, BytesOut: r.BytesOut, ReplicaBytesOut: r.ReplicaBytesOut, LocalBytes: p.Size()})
	}
	if len(l.Partitions) > metadata.MaxLoadPartitions {
		slices.SortStableFunc(l.Partitions, func(a, b metadata.PartitionLoad) int {
			return -cmpFloat(a.BytesIn+a.BytesOut+a.ReplicaBytesOut, b.BytesIn+b.BytesOut+b.ReplicaBytesOut)
		})
		l.Partitions = l.Partitions[:metadata.MaxLoadPartitions]
	}
	return l
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// loadChanged reports whether next differs from last enough to be written:
// a replica added, dropped or changing role, or a rate or size moved by
// loadChangeFraction and its floor.
func loadChanged(last, next metadata.AgentLoad) bool {
	if len(last.Partitions) != len(next.Partitions) {
		return true
	}
	type key struct {
		id [16]byte
		p  int32
	}
	before := make(map[key]metadata.PartitionLoad, len(last.Partitions))
	for _, p := range last.Partitions {
		before[key{p.TopicID, p.Partition}] = p
	}
	moved := func(a, b, floor float64) bool {
		d := math.Abs(a - b)
		return d > floor && d > loadChangeFraction*max(a, b)
	}
	for _, n := range next.Partitions {
		b, ok := before[key{n.TopicID, n.Partition}]
		if !ok || b.Leader != n.Leader ||
			moved(b.BytesIn, n.BytesIn, loadChangeRate) || moved(b.BytesOut, n.BytesOut, loadChangeRate) ||
			moved(b.ReplicaBytesOut, n.ReplicaBytesOut, loadChangeRate) ||
			moved(float64(b.LocalBytes), float64(n.LocalBytes), loadChangeBytes) {
			return true
		}
	}
	return false
}

// cachedReport is a report as the balancer last read it.
type cachedReport struct {
	report metadata.AgentLoad
	readAt time.Time
}

// rememberedLoad is a partition's last settled load.
type rememberedLoad struct {
	load placement.Load
	at   time.Time
}

// partitionLoads is every reported partition's load as of now, from this
// agent's own replicas and the other live agents' reports (read again
// once older than the report interval). It runs in balancer rounds,
// under roundMu, which guards the cache and the memory.
func (c *Controller) partitionLoads(ctx context.Context, now time.Time) map[Key]placement.Load {
	reports := []metadata.AgentLoad{c.localLoad(now)}
	live := map[int32]bool{c.id: true}
	for _, m := range c.members.Members() {
		if m.ID == c.id || live[m.ID] {
			continue
		}
		live[m.ID] = true
		cached, ok := c.loadReports[m.ID]
		if !ok || now.Sub(cached.readAt) >= c.cfg.LoadReportInterval || now.Before(cached.readAt) {
			l, found, err := c.store.AgentLoad(ctx, m.ID)
			switch {
			case err != nil:
				c.logger.Warn("balancer: read load report", "agent", m.ID, "err", err)
			case found:
				cached = cachedReport{report: l, readAt: now}
				c.loadReports[m.ID] = cached
			default:
				delete(c.loadReports, m.ID)
				continue
			}
		}
		if cached.report.AgentID == m.ID {
			reports = append(reports, cached.report)
		}
	}
	for id := range c.loadReports {
		if !live[id] {
			delete(c.loadReports, id) // gone from gossip: read afresh if it returns
		}
	}
	var loads map[Key]placement.Load
	loads, c.loadMemory = mergeLoads(reports, c.loadMemory, now)
	return loads
}

// loadEntry is one report's entry for a partition, with its role's age as
// of the merge.
type loadEntry struct {
	metadata.PartitionLoad
	writtenAt time.Time
	roleAge   time.Duration
}

// mergeLoads decides each reported partition's load from the reports and
// the loads remembered from earlier rounds (the file comment): a settled
// leader's newest entry, else the remembered one, else an unsettled
// leader's, else a settled follower's bytes in. It returns the loads and
// the memory for the next round.
func mergeLoads(reports []metadata.AgentLoad, memory map[Key]rememberedLoad, now time.Time) (map[Key]placement.Load, map[Key]rememberedLoad) {
	entries := map[Key][]loadEntry{}
	for _, r := range reports {
		for _, p := range r.Partitions {
			k := Key{p.TopicID, p.Partition}
			entries[k] = append(entries[k], loadEntry{PartitionLoad: p, writtenAt: r.WrittenAt, roleAge: p.RoleAge + max(now.Sub(r.WrittenAt), 0)})
		}
	}
	loads := map[Key]placement.Load{}
	next := map[Key]rememberedLoad{}
	for k, m := range memory {
		if now.Sub(m.at) < loadMemory {
			next[k] = m
		}
	}
	asLoad := func(e loadEntry) placement.Load {
		return placement.Load{BytesIn: e.BytesIn, BytesOut: e.BytesOut, DiskBytes: e.LocalBytes}
	}
	for k, es := range entries {
		// Newest first; among equals, the longest in its role.
		slices.SortStableFunc(es, func(a, b loadEntry) int {
			if c := b.writtenAt.Compare(a.writtenAt); c != 0 {
				return c
			}
			return cmpFloat(float64(b.roleAge), float64(a.roleAge))
		})
		settledLeader := slices.IndexFunc(es, func(e loadEntry) bool { return e.Leader && e.roleAge >= loadSettled })
		if settledLeader >= 0 {
			loads[k] = asLoad(es[settledLeader])
			next[k] = rememberedLoad{load: loads[k], at: es[settledLeader].writtenAt}
			continue
		}
		if m, ok := next[k]; ok {
			loads[k] = m.load
			continue
		}
		if leader := slices.IndexFunc(es, func(e loadEntry) bool { return e.Leader }); leader >= 0 {
			loads[k] = asLoad(es[leader])
			continue
		}
		if f := slices.IndexFunc(es, func(e loadEntry) bool { return e.roleAge >= loadSettled }); f >= 0 {
			loads[k] = placement.Load{BytesIn: es[f].BytesIn, DiskBytes: es[f].LocalBytes}
		}
	}
	// A partition no report lists any more keeps its remembered load.
	for k, m := range next {
		if _, ok := loads[k]; !ok {
			loads[k] = m.load
		}
	}
	return loads, next
}

// withLoads gives each of parts its load: the measured one, else the mean
// of its topic's measured partitions, else none. refs name parts, in
// order.
func withLoads(parts []placement.Partition, refs []stateRef, loads map[Key]placement.Load) {
	type sum struct {
		load placement.Load
		n    int
	}
	byTopic := map[[16]byte]*sum{}
	known := make([]bool, len(parts))
	for i, r := range refs {
		l, ok := loads[Key{r.topicID, r.index}]
		if !ok {
			continue
		}
		parts[i].Load, known[i] = l, true
		s := byTopic[r.topicID]
		if s == nil {
			s = &sum{}
			byTopic[r.topicID] = s
		}
		s.load.BytesIn += l.BytesIn
		s.load.BytesOut += l.BytesOut
		s.load.DiskBytes += l.DiskBytes
		s.n++
	}
	for i, r := range refs {
		if s := byTopic[r.topicID]; !known[i] && s != nil {
			parts[i].Load = placement.Load{BytesIn: s.load.BytesIn / float64(s.n), BytesOut: s.load.BytesOut / float64(s.n),
				DiskBytes: s.load.DiskBytes / int64(s.n)}
		}
	}
}
