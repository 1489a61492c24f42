package diskless

// Reads: the coordinator says where a partition's batches are
// (DisklessIndex), and their bytes come from the commit objects, each
// read whole by one GET and kept in the chunk cache, which the writer
// primes with the objects it uploads. Every batch is stamped with the
// base offset and the coordinator epoch it was committed at before it is
// served: both lie outside the batch's CRC.

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// index asks k's coordinator one question, without waiting, and learns
// the offsets its answer carries.
func (s *Service) index(ctx context.Context, k batchcoord.PartitionKey, op int8, value int64, maxBytes int32) (disklesswire.IndexAnswer, error) {
	a, co, err := s.ask(ctx, disklesswire.IndexPartition{TopicID: k.TopicID, Partition: k.Partition, Op: op, Value: value, MaxBytes: maxBytes})
	if err != nil {
		return a, err
	}
	s.learn(k, co, viewOf(a))
	return a, nil
}

// ask sends one partition's DisklessIndex question to its coordinator
// and returns the answer, with the partition's error as an error.
func (s *Service) ask(ctx context.Context, q disklesswire.IndexPartition) (disklesswire.IndexAnswer, Coord, error) {
	co, err := s.host.Coordinator(ctx, q.TopicID, q.Partition)
	if err != nil {
		return disklesswire.IndexAnswer{}, co, err
	}
	req := &disklesswire.IndexRequest{Partitions: []disklesswire.IndexPartition{q}}
	var resp *disklesswire.IndexResponse
	err = s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error {
		var err error
		resp, err = c.DisklessIndex(ctx, req)
		return err
	})
	if err != nil {
		return disklesswire.IndexAnswer{}, co, err
	}
	a := resp.Partitions[0]
	return a, co, peer.CodeError(a.ErrorCode, co.Addr)
}

func viewOf(a disklesswire.IndexAnswer) batchcoord.View {
	return batchcoord.View{LogStart: a.LogStart, CompactedEnd: a.CompactedEnd, HighWatermark: a.HighWatermark,
		LastStable: a.LastStable, Epoch: a.CoordEpoch}
}

// prime keeps an object this agent just uploaded in the cache, so that
// its batches are read here without a GET. data is the writer's and not
// changed after.
func (s *Service) prime(id sharedobj.ID, data []byte) {
	s.chunks.Prefetch(id.Key(), func(context.Context) ([]byte, error) { return data, nil })
}

// object returns the whole commit object id and the offset of its data
// section, checked.
func (s *Service) object(ctx context.Context, id sharedobj.ID) ([]byte, int, error) {
	data, err := s.chunks.Get(ctx, id.Key(), func(ctx context.Context) ([]byte, error) {
		b, _, err := s.bucket.Get(ctx, id.Key())
		if err != nil {
			return nil, fmt.Errorf("diskless: read object %s: %w", id, err)
		}
		h, err := sharedobj.DecodeHeader(b, int64(len(b)))
		if err != nil {
			return nil, fmt.Errorf("diskless: object %s: %w", id, err)
		}
		if err := h.CheckData(b[h.Size():]); err != nil {
			return nil, fmt.Errorf("diskless: object %s: %w", id, err)
		}
		return b, nil
	})
	if err != nil {
		return nil, 0, err
	}
	n, err := sharedobj.PeekHeaderSize(data)
	if err != nil {
		return nil, 0, fmt.Errorf("diskless: object %s: %w", id, err)
	}
	return data, n, nil
}

// read returns the batches located, stamped, in order: at most maxBytes
// but at least the first when minOne, and none at or above limit (the
// high watermark the caller answers with).
func (s *Service) read(ctx context.Context, located []disklesswire.Located, maxBytes int, minOne bool, limit int64) ([]byte, error) {
	var out []byte
	for _, l := range located {
		if l.BaseOffset >= limit {
			break
		}
		if len(out)+int(l.Size) > maxBytes && (len(out) > 0 || !minOne) {
			break
		}
		raw, err := s.batchBytes(ctx, l)
		if err != nil {
			if len(out) > 0 {
				return out, nil // what was read; the next fetch retries the rest
			}
			return nil, err
		}
		at := len(out)
		out = append(out, raw...)
		batch.SetBaseOffset(out[at:], l.BaseOffset)
		batch.SetPartitionLeaderEpoch(out[at:], l.Epoch)
	}
	return out, nil
}

// batchBytes returns one located batch's bytes (shared: not to be
// changed), checked against what the coordinator recorded.
func (s *Service) batchBytes(ctx context.Context, l disklesswire.Located) ([]byte, error) {
	if l.ObjectID == ([16]byte{}) {
		return l.Inline, nil
	}
	data, start, err := s.object(ctx, sharedobj.ID(l.ObjectID))
	if err != nil {
		return nil, err
	}
	from := int64(start) + l.Position
	if l.Position < 0 || l.Size < batch.HeaderSize || from+int64(l.Size) > int64(len(data)) {
		return nil, fmt.Errorf("diskless: object %s holds no batch of %d bytes at %d", sharedobj.ID(l.ObjectID), l.Size, l.Position)
	}
	raw := data[from : from+int64(l.Size)]
	h, err := batch.ParseHeader(raw)
	if err != nil || h.Size() != int(l.Size) || int64(h.LastOffsetDelta) != l.LastOffset-l.BaseOffset {
		return nil, fmt.Errorf("diskless: object %s at %d is not the batch of offsets %d-%d", sharedobj.ID(l.ObjectID), l.Position, l.BaseOffset, l.LastOffset)
	}
	return raw, nil
}
