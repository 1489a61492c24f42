package batchcoord

// Loading a coordinator: the partition of __diskless_state is replayed
// to its high watermark, gathering per diskless partition its newest
// Partition record and its Run records not tombstoned, then each
// partition's state is built from the record (log start, start of the
// index, epochs, producer state there) and the Runs at or above the
// index's start, in offset order. Gathering first matters once the
// cleaner has run: it removes tombstoned Runs and older Partition
// records, so the surviving records need not come in an order that could
// be applied one by one.

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

// gathered is what a replay found of one diskless partition.
type gathered struct {
	part *Partition    // newest Partition record; nil: none
	runs map[int64]Run // by base offset
}

// Load replays partition's log up to its high watermark and returns a
// ready coordinator. Runs that leave a gap above the start of their
// partition's index fail the load, naming the partition and offset.
func Load(partition int32, l coordlog.Log, cfg Config, logger *slog.Logger) (*Coordinator, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Coordinator{partition: partition, log: l, cfg: cfg, logger: logger,
		parts: map[PartitionKey]*partState{}, recent: map[[16]byte]*committedObject{}}
	oldest := cfg.Now().Add(-cfg.CommitTimeout).UnixMilli()
	all := map[PartitionKey]*gathered{}
	err := coordlog.Replay(l, func(h batch.Header, raw []byte) error {
		if h.IsControl() {
			return nil
		}
		recs, err := coordlog.Records(raw)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := c.gather(all, r, oldest); err != nil {
				return fmt.Errorf("offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
		}
		return nil
	})
	if err == nil {
		err = c.build(all)
	}
	if err != nil {
		return nil, fmt.Errorf("batchcoord: replay partition %d: %w", partition, err)
	}
	return c, nil
}

// gather records one replayed record. A newer record type is skipped, as
// Kafka's coordinators do.
func (c *Coordinator) gather(all map[PartitionKey]*gathered, r batch.Record, oldest int64) error {
	typ, err := KeyType(r.Key)
	if err != nil {
		return err
	}
	of := func(k PartitionKey) *gathered {
		g, ok := all[k]
		if !ok {
			g = &gathered{runs: map[int64]Run{}}
			all[k] = g
		}
		return g
	}
	switch typ {
	case KeyRun:
		k, err := DecodeRunKey(r.Key)
		if err != nil {
			return err
		}
		if r.Value == nil {
			delete(of(k.PartitionKey).runs, k.BaseOffset)
			return nil
		}
		run, err := DecodeRun(r.Value)
		if err != nil {
			return err
		}
		of(k.PartitionKey).runs[k.BaseOffset] = run
		if run.CommitMs >= oldest && run.ObjectID != ([16]byte{}) {
			c.remember(run.ObjectID, run.CommitMs, k, run)
		}
	case KeyPartition:
		k, err := DecodePartitionKey(r.Key)
		if err != nil {
			return err
		}
		if r.Value == nil {
			delete(all, k) // the topic was deleted
			return nil
		}
		v, err := DecodePartition(r.Value)
		if err != nil {
			return err
		}
		of(k).part = &v
	}
	return nil
}

// build makes each gathered partition's state.
func (c *Coordinator) build(all map[PartitionKey]*gathered) error {
	for k, g := range all {
		p := newPartState(0)
		if v := g.part; v != nil {
			p = newPartState(v.CompactedEnd)
			p.logStart, p.epochs, p.baseSnap = v.LogStart, slices.Clone(v.Epochs), v.Snapshot
			if len(v.Snapshot) > 0 {
				_, ps, err := producers.Decode(v.Snapshot, true)
				if err != nil {
					return fmt.Errorf("partition %x/%d: producer snapshot: %w", k.TopicID, k.Partition, err)
				}
				p.producers = ps
			}
		}
		bases := make([]int64, 0, len(g.runs))
		for b := range g.runs {
			if b >= p.index.Start() {
				bases = append(bases, b)
			}
		}
		slices.Sort(bases)
		for _, b := range bases {
			if err := c.applyRun(p, RunKey{k, b}, g.runs[b]); err != nil {
				return err
			}
		}
		c.parts[k] = p
	}
	return nil
}

// applyRun extends p's index and producer state with a committed run.
func (c *Coordinator) applyRun(p *partState, k RunKey, run Run) error {
	if err := p.extend(k, run); err != nil {
		return err
	}
	for _, s := range run.Batches {
		h := s.header(k.BaseOffset)
		m, err := markerOf(&h, s.Inline)
		if err != nil {
			return fmt.Errorf("partition %x/%d: the marker at %d: %w", k.TopicID, k.Partition, h.BaseOffset, err)
		}
		p.completed(p.producers.Update(&h, m))
	}
	return nil
}

// markerOf is a control batch's marker; the zero Marker otherwise.
func markerOf(h *batch.Header, inline []byte) (batch.Marker, error) {
	if !h.IsControl() {
		return batch.Marker{}, nil
	}
	return batch.ParseMarker(inline)
}
