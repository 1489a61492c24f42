package diskless

// Object compaction (docs/design.md §7a): each agent turns the oldest
// batches of the diskless partitions whose batch coordinators it runs into
// segments in the tiered format, so that they are read, retained and
// verified as a tiered partition's and the coordinator's index (its
// memory, its load) stays short. For each such partition:
//
//  1. When its index holds segment.bytes, or its oldest batch was
//     committed --diskless-compaction-max-lag ago, the batches up to a
//     Run boundary are read from their objects (through the object
//     cache), stamped with their offsets and epochs, and written under
//     --data-dir/diskless-compaction with their offset and time indexes
//     and the aborted transactions they end (a .txnindex): the staged
//     segment, which wiping the directory only delays.
//  2. tiering uploads it as the sealed segment of a tiering.Source whose
//     leader epoch is the coordinator's, and appends it to the
//     partition's manifest with one conditional write fenced by that
//     epoch: a deposed coordinator's append fails.
//  3. tiering then reports the manifest's new end (SetRemoteEnd), and the
//     coordinator moves the start of its index there with one Partition
//     record (batchcoord.Coordinator.Compacted); the objects that lose
//     their last Run are left to the orphan janitor.
//
// A crash between 2 and 3 leaves the manifest ahead of the coordinator's
// index: when the next coordinator's compactor opens the partition,
// tiering finds the manifest's end above the index's start and asks the
// log to restart there (RestartAt), which moves the index's start. Reads
// below the index's start go to the manifest (remote.go).
//
// Retention: tiering applies retention.ms and retention.bytes to the
// compacted segments (ApplyRetention), and the coordinator's log start
// follows the manifest's start.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/tiering"
)

// compactPart is one diskless partition compacted here: a tiering.Source
// whose log is the staged segment (at most one at a time).
type compactPart struct {
	s     *Service
	key   batchcoord.PartitionKey
	topic string
	tp    *tiering.Partition

	mu     sync.Mutex
	coord  *batchcoord.Coordinator
	staged *staged
	// retained is when tiering's retention last ran on the compacted
	// part: at most once a retentionEvery, since it may read manifest
	// pages from the bucket.
	retained time.Time
}

// retentionEvery is how often a compacted part's retention is applied.
const retentionEvery = time.Minute

var _ tiering.Source = (*compactPart)(nil)

func (cp *compactPart) Topic() string      { return cp.topic }
func (cp *compactPart) TopicID() [16]byte  { return cp.key.TopicID }
func (cp *compactPart) Index() int32       { return cp.key.Partition }
func (cp *compactPart) Log() tiering.Log   { return compactLog{cp} }
func (cp *compactPart) LeaderEpoch() int32 { return cp.current().Epoch() }
func (cp *compactPart) Leading() bool      { return !cp.current().Closed() }

// HighWatermark is the coordinator's: a staged segment is committed whole.
func (cp *compactPart) HighWatermark() int64 {
	v, _, err := cp.current().Read(cp.key, -1, 1)
	if err != nil {
		return 0
	}
	return v.HighWatermark
}

func (cp *compactPart) current() *batchcoord.Coordinator {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.coord
}

// indexStart is where the coordinator's index starts (its compacted end).
func (cp *compactPart) indexStart() int64 {
	v, _, err := cp.current().Read(cp.key, -1, 1)
	if err != nil {
		return 0
	}
	return v.CompactedEnd
}

// compacted tells the coordinator that the manifest ends at end.
func (cp *compactPart) compacted(end int64) {
	if end <= cp.indexStart() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if err := cp.current().Compacted(ctx, cp.key, end); err != nil {
		cp.s.logger.Warn("diskless compaction: move the index start", "topic", cp.topic, "partition", cp.key.Partition, "end", end, "err", err)
		return
	}
	cp.mu.Lock()
	st := cp.staged
	if st != nil && st.seg.Next <= end {
		cp.staged = nil
	}
	cp.mu.Unlock()
	if st != nil && st.seg.Next <= end {
		st.remove()
	}
	cp.s.compactions.Inc()
}

// compactLog is a compacted partition as tiering sees its log: empty at
// the coordinator's index start, with the staged segment sealed.
type compactLog struct{ cp *compactPart }

func (l compactLog) SealedSegments(from int64) []tiering.Segment {
	l.cp.mu.Lock()
	defer l.cp.mu.Unlock()
	if st := l.cp.staged; st != nil && st.seg.Next > from {
		return []tiering.Segment{st.seg}
	}
	return nil
}

func (l compactLog) OpenSealed(base int64) (*tiering.SegmentView, error) {
	l.cp.mu.Lock()
	st := l.cp.staged
	l.cp.mu.Unlock()
	if st == nil || st.seg.Base != base {
		return nil, fmt.Errorf("diskless compaction: no staged segment at %d", base)
	}
	return st.view()
}

func (l compactLog) SetRemoteEnd(end int64)                 { l.cp.compacted(end) }
func (l compactLog) RestartAt(offset int64, _ []byte) error { l.cp.compacted(offset); return nil }
func (l compactLog) LogStartOffset() int64                  { return l.cp.indexStart() }
func (l compactLog) LogEndOffset() int64                    { return l.cp.indexStart() }
func (l compactLog) Size() int64                            { return 0 }
func (l compactLog) DeleteRecordsBefore(int64) error        { return nil }

// CompactOnce is one round of object compaction over the partitions of
// coordinators, the batch coordinators loaded here: it stages the next
// segment of each partition that is due, applies tiering's retention to
// the compacted part, and lets go of partitions led elsewhere now.
func (s *Service) CompactOnce(ctx context.Context, coordinators []*batchcoord.Coordinator, topic func([16]byte) (*dataplane.Topic, bool)) {
	seen := map[batchcoord.PartitionKey]bool{}
	for _, bc := range coordinators {
		if bc.Closed() {
			continue
		}
		for _, k := range bc.Keys() {
			t, ok := topic(k.TopicID)
			if !ok || !t.Resolved.Diskless {
				continue
			}
			seen[k] = true
			cp, err := s.compactPart(ctx, bc, k, t.Name)
			if err != nil {
				s.logger.Warn("diskless compaction: open", "topic", t.Name, "partition", k.Partition, "err", err)
				continue
			}
			if err := s.compactStep(ctx, cp, t.Resolved); err != nil && ctx.Err() == nil {
				s.logger.Warn("diskless compaction", "topic", t.Name, "partition", k.Partition, "err", err)
			}
		}
	}
	s.mu.Lock()
	var gone []*compactPart
	for k, cp := range s.compacting {
		if !seen[k] {
			gone = append(gone, cp)
			delete(s.compacting, k)
		}
	}
	s.mu.Unlock()
	for _, cp := range gone {
		cp.tp.Close()
		cp.mu.Lock()
		st := cp.staged
		cp.mu.Unlock()
		if st != nil {
			st.remove()
		}
	}
}

// compactPart returns k's compactPart, opening its tiering partition the
// first time (which moves the index's start up to the manifest's end).
func (s *Service) compactPart(ctx context.Context, bc *batchcoord.Coordinator, k batchcoord.PartitionKey, topic string) (*compactPart, error) {
	s.mu.Lock()
	cp, ok := s.compacting[k]
	s.mu.Unlock()
	if ok {
		cp.mu.Lock()
		cp.coord = bc
		cp.mu.Unlock()
		return cp, nil
	}
	cp = &compactPart{s: s, key: k, topic: topic, coord: bc}
	tp, err := s.tier.Open(ctx, cp, metadata.PartitionPrefix(k.TopicID, k.Partition))
	if err != nil {
		return nil, err
	}
	cp.tp = tp
	s.mu.Lock()
	s.compacting[k] = cp
	s.mu.Unlock()
	return cp, nil
}

// compactStep stages k's next segment when one is due and none is
// staged, and applies retention to what is compacted.
func (s *Service) compactStep(ctx context.Context, cp *compactPart, r metadata.Resolved) error {
	if err := s.retainCompacted(ctx, cp, r); err != nil {
		return err
	}
	cp.mu.Lock()
	busy := cp.staged != nil
	cp.mu.Unlock()
	if busy {
		return nil
	}
	plan := cp.current().CompactionPlan(cp.key, int64(r.SegmentBytes), time.Now().Add(-s.cfg.CompactionMaxLag).UnixMilli())
	if len(plan) == 0 {
		return nil
	}
	st, err := s.stage(ctx, cp, plan)
	if err != nil {
		return err
	}
	cp.mu.Lock()
	cp.staged = st
	cp.mu.Unlock()
	return nil
}

// retainCompacted applies retention.ms and retention.bytes to the
// compacted segments, at most once a retentionEvery, and moves the log
// start up to the manifest's new start.
func (s *Service) retainCompacted(ctx context.Context, cp *compactPart, r metadata.Resolved) error {
	now := time.Now()
	if now.Sub(cp.retained) < retentionEvery {
		return nil
	}
	cp.retained = now
	if n, err := cp.tp.ApplyRetention(ctx, now, r.RetentionMs, r.RetentionBytes); err != nil {
		return fmt.Errorf("retention of the compacted segments: %w", err)
	} else if n > 0 {
		if err := cp.current().Retain(ctx, cp.key, cp.tp.Start()); err != nil {
			return err
		}
	}
	return nil
}

// stagingDir is where k's segments are staged.
func (s *Service) stagingDir(k batchcoord.PartitionKey) string {
	return filepath.Join(s.cfg.StagingDir, fmt.Sprintf("%x-%d", k.TopicID, k.Partition))
}

// resetStaging empties the staging directory: what a crash left there
// is staged again.
func (s *Service) resetStaging() error {
	if s.cfg.StagingDir == "" {
		return nil
	}
	if err := os.RemoveAll(s.cfg.StagingDir); err != nil {
		return err
	}
	return os.MkdirAll(s.cfg.StagingDir, 0o755)
}
