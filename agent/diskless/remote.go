package diskless

// Reads below a diskless partition's compacted end go to its tiered
// segments, through a tiering.Partition that only reads (its Source
// never leads): object compaction moved those batches there (compact.go).
// Its manifest is read again when the coordinator says the compacted end
// moved past what the manifest last said.

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/tiering"
)

// remotePart is the reading side of one diskless partition's tiered
// segments on this agent.
type remotePart struct {
	key   batchcoord.PartitionKey
	topic string
	tp    *tiering.Partition
}

var _ tiering.Source = (*remotePart)(nil)

func (r *remotePart) Topic() string        { return r.topic }
func (r *remotePart) TopicID() [16]byte    { return r.key.TopicID }
func (r *remotePart) Index() int32         { return r.key.Partition }
func (r *remotePart) Log() tiering.Log     { return readLog{} }
func (r *remotePart) LeaderEpoch() int32   { return -1 }
func (r *remotePart) HighWatermark() int64 { return 0 }
func (r *remotePart) Leading() bool        { return false }

// readLog is the empty log of a partition read only from the bucket.
type readLog struct{}

func (readLog) SealedSegments(int64) []tiering.Segment         { return nil }
func (readLog) OpenSealed(int64) (*tiering.SegmentView, error) { return nil, tiering.ErrNotInBucket }
func (readLog) SetRemoteEnd(int64)                             {}
func (readLog) RestartAt(int64, []byte) error                  { return nil }
func (readLog) LogStartOffset() int64                          { return 0 }
func (readLog) LogEndOffset() int64                            { return 0 }
func (readLog) Size() int64                                    { return 0 }
func (readLog) DeleteRecordsBefore(int64) error                { return nil }

// remote returns k's reading tiering partition, opened on first use, its
// manifest read again if it ends below compactedEnd.
func (s *Service) remote(ctx context.Context, k batchcoord.PartitionKey, topic string, compactedEnd int64) (*tiering.Partition, error) {
	s.mu.Lock()
	r, ok := s.remotes[k]
	s.mu.Unlock()
	if !ok {
		r = &remotePart{key: k, topic: topic}
		tp, err := s.tier.Open(ctx, r, metadata.PartitionPrefix(k.TopicID, k.Partition))
		if err != nil {
			return nil, err
		}
		r.tp = tp
		s.mu.Lock()
		if other, ok := s.remotes[k]; ok {
			s.mu.Unlock()
			tp.Close()
			r = other
		} else {
			s.remotes[k] = r
			s.mu.Unlock()
		}
	}
	if r.tp.Next() < compactedEnd {
		// At most one manifest read a second per partition.
		if err := r.tp.Refresh(ctx, time.Now().Add(-time.Second)); err != nil {
			return nil, err
		}
	}
	return r.tp, nil
}
