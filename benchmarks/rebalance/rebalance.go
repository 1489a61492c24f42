// Package rebalance measures what it costs to rebalance onto an agent that
// joins: the time until the new agent holds its share of a topic's
// replicas, and the bytes it copied from leaders to get there, as a
// function of how much history the topic holds.
//
// One measurement (Measure) starts a cluster of Config.Agents agents on
// loopback sharing one file:// store (loadgen.StrataCluster), creates a
// tiered topic, produces HistoryBytes of records, waits until the leaders
// have uploaded all but the active segment, then starts one more agent and
// watches Metadata, ListPartitionReassignments and the new agent's
// /metrics until it holds its fair share with no move in flight. A moved
// replica restores from the store and copies only the untiered tail, so
// both numbers should stay flat as the history grows.
//
// MeasureHot (hot.go) measures whether a join evens out the agents'
// measured load when one partition takes ten times the others' rate, with
// the balancer placing by load or by counts.
//
// Measure and MeasureHot run one cluster at a time and stop every process
// they started before they return; they may be called again afterwards
// but not concurrently with each other on one machine (the numbers would
// interfere).
package rebalance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// Config is one measurement's shape. DefaultConfig gives the issue's
// settings; HistoryBytes is the one thing a sweep varies.
type Config struct {
	// Binary is a built strata binary; empty means build ./cmd/strata of
	// the working directory's module.
	Binary string
	// Agents is the cluster's size before the join.
	Agents int
	// Partitions and ReplicationFactor shape the topic.
	Partitions        int
	ReplicationFactor int
	// HistoryBytes is how many record value bytes are produced before the
	// join, across all partitions.
	HistoryBytes int64
	// RecordBytes is each record's value size.
	RecordBytes int
	// SegmentBytes and LocalRetentionBytes are the topic's segment.bytes
	// and local.retention.bytes; retention.ms is -1.
	SegmentBytes        int64
	LocalRetentionBytes int64
	// RebalanceSettle, TieringInterval and RetentionCheckInterval are the
	// agents' --rebalance-settle (0: the agent's default), --tiering-interval
	// and --retention-check-interval.
	RebalanceSettle        time.Duration
	TieringInterval        time.Duration
	RetentionCheckInterval time.Duration
	// TieringWait bounds the wait for the leaders to upload all but their
	// active segment; a run that hits it goes on and says so in
	// Result.TieringSettled.
	TieringWait time.Duration
	// RebalanceTimeout bounds the wait for the balanced placement.
	RebalanceTimeout time.Duration
	// Confirm is how long the balanced placement must hold, with no move
	// in flight, before the run counts it as reached (the time reported is
	// when it was first seen).
	Confirm time.Duration
	// PollInterval is how often the placement is read.
	PollInterval time.Duration
	// LoadRate is the records a second an acks=all producer writes to the
	// topic, RecordBytes each, from before the join until the end; 0 is
	// none.
	LoadRate int
}

// DefaultConfig is 3 agents joined by a 4th, a topic of 6 partitions with
// 2 replicas, 1 KiB records, 1 MiB segments and 1 MiB kept locally.
func DefaultConfig() Config {
	return Config{
		Agents:                 3,
		Partitions:             6,
		ReplicationFactor:      2,
		HistoryBytes:           4 << 20,
		RecordBytes:            1024,
		SegmentBytes:           1 << 20,
		LocalRetentionBytes:    1 << 20,
		TieringInterval:        200 * time.Millisecond,
		RetentionCheckInterval: 500 * time.Millisecond,
		TieringWait:            60 * time.Second,
		RebalanceTimeout:       120 * time.Second,
		Confirm:                time.Second,
		PollInterval:           100 * time.Millisecond,
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Agents < 1:
		return fmt.Errorf("rebalance: Agents %d: want at least 1", c.Agents)
	case c.Partitions < 1:
		return fmt.Errorf("rebalance: Partitions %d: want at least 1", c.Partitions)
	case c.ReplicationFactor < 1 || c.ReplicationFactor > c.Agents:
		return fmt.Errorf("rebalance: ReplicationFactor %d: want 1 to Agents (%d)", c.ReplicationFactor, c.Agents)
	case c.HistoryBytes < 0:
		return fmt.Errorf("rebalance: HistoryBytes %d: want at least 0", c.HistoryBytes)
	case c.RecordBytes < 1:
		return fmt.Errorf("rebalance: RecordBytes %d: want at least 1", c.RecordBytes)
	case c.SegmentBytes < 1 || c.LocalRetentionBytes < 1:
		return errors.New("rebalance: SegmentBytes and LocalRetentionBytes must be positive")
	case c.LoadRate < 0 || c.RebalanceSettle < 0:
		return errors.New("rebalance: LoadRate and RebalanceSettle must not be negative")
	case c.TieringWait <= 0 || c.RebalanceTimeout <= 0 || c.PollInterval <= 0 || c.Confirm < 0:
		return errors.New("rebalance: TieringWait, RebalanceTimeout and PollInterval must be positive, Confirm not negative")
	}
	return nil
}

// Result is one measurement.
type Result struct {
	HistoryBytes int64
	// Produced is how many record value bytes were acknowledged.
	Produced int64
	// TieringSettled is whether every leader had uploaded all but its
	// active segment before the join (false: TieringWait ran out).
	TieringSettled bool
	// LocalBytes is, at the join, the sum over partitions of the leader's
	// local log bytes: the most a full copy of the local logs would move.
	LocalBytes int64
	// RemoteBytes is, at the join, the bytes of the topic in the store.
	RemoteBytes int64
	// Rebalance is the time from the new agent's start to the balanced
	// placement with no move in flight.
	Rebalance time.Duration
	// CopiedBytes is the new agent's strata_replica_copied_bytes_total for
	// the topic once balanced.
	CopiedBytes int64
	// FullCopyBytes is what the new agent would have copied had it fetched
	// its replicas' whole history: Produced × Replicas / Partitions.
	FullCopyBytes int64
	// Replicas is how many of the topic's replicas the new agent holds.
	Replicas int
	// MovesStarted and MovesCompleted are the sums of
	// strata_reassignments_started_total and
	// strata_reassignments_completed_total over all agents once balanced;
	// more than the new agent's Replicas means replicas moved back and
	// forth.
	MovesStarted, MovesCompleted int64
	// Trace is how the placement changed from the join to the end.
	Trace []Step
	// LoadAcked and LoadFailed are the load's records acknowledged and
	// failed (Config.LoadRate), LoadErr the first failure.
	LoadAcked, LoadFailed int64
	LoadErr               error
}

// Measure runs one measurement and stops every agent it started.
func Measure(ctx context.Context, cfg Config) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	res.HistoryBytes = cfg.HistoryBytes
	dir, err := os.MkdirTemp("", "strata-rebalance-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	args := []string{
		"--tiering-interval", cfg.TieringInterval.String(),
		"--retention-check-interval", cfg.RetentionCheckInterval.String(),
		// Stop at once on SIGTERM: teardown is not what is measured,
		// and a draining agent would move replicas while the next one
		// stops.
		"--drain-timeout", "0s",
	}
	if cfg.RebalanceSettle > 0 {
		args = append(args, "--rebalance-settle", cfg.RebalanceSettle.String())
	}
	cluster, err := loadgen.StartStrataCluster(ctx, loadgen.StrataClusterOptions{
		Agents: cfg.Agents,
		Binary: cfg.Binary,
		Dir:    dir,
		Args:   args,
	})
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := cluster.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("rebalance: stop cluster: %w", cerr)
		}
	}()
	const topic = "rebalance"
	if err := createTopic(ctx, cluster.Seeds(), topic, cfg); err != nil {
		return res, err
	}
	if res.Produced, err = produce(ctx, cluster.Seeds(), topic, cfg); err != nil {
		return res, err
	}
	tier, err := awaitTiered(ctx, cluster.Agents(), topic, cfg)
	if err != nil {
		return res, err
	}
	res.TieringSettled, res.LocalBytes, res.RemoteBytes = tier.settled, tier.localBytes, tier.remoteBytes

	ld, err := startLoad(cluster.Seeds(), topic, cfg.LoadRate, cfg.RecordBytes)
	if err != nil {
		return res, err
	}
	start := time.Now()
	joined, err := cluster.Join(ctx)
	if err != nil {
		ld.stop()
		return res, err
	}
	newID := int32(cfg.Agents) // loadgen numbers agents 0, 1, ...
	reached, replicas, trace, err := awaitBalanced(ctx, cluster.Seeds()[0], topic, newID, start, cfg)
	res.LoadAcked, res.LoadFailed, res.LoadErr = ld.stop()
	res.Trace = trace
	if err != nil {
		return res, fmt.Errorf("rebalance: %d MiB of history: %w", cfg.HistoryBytes>>20, err)
	}
	res.Rebalance, res.Replicas = reached.Sub(start), replicas
	res.FullCopyBytes = res.Produced * int64(replicas) / int64(cfg.Partitions)
	m, err := scrape(ctx, joined.HTTPAddr())
	if err != nil {
		return res, err
	}
	res.CopiedBytes = int64(m.copied[topic])
	for _, a := range cluster.Agents() {
		m, err := scrape(ctx, a.HTTPAddr())
		if err != nil {
			return res, err
		}
		res.MovesStarted += int64(m.movesStarted)
		res.MovesCompleted += int64(m.movesCompleted)
	}
	return res, nil
}
