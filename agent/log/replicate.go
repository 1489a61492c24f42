package log

import (
	"errors"
	"fmt"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// AppendReplicated writes batches a follower fetched from its leader. They
// already carry their offsets and leader epochs, which are kept: the
// follower's log must be the leader's byte for byte, so that epochs and
// offsets agree when it leads in turn (a decompression bomb stored before
// the bound comes in its empty form, with the same offsets and epoch:
// agent/kafka/quarantine.go). Offsets must increase from the log end;
// gaps are allowed, since a compacted leader's log has them (the batch
// that held an offset may be gone). Every CRC is checked, since
// the bytes crossed the network. Producer state is updated (a follower that
// becomes leader recognises retried batches) but not enforced: the leader
// already decided.
//
// With log.flush=always it returns after an fsync, so the offset the
// follower reports in its next fetch is durable here: the leader counts it
// towards the high watermark. It returns the new log end.
func (l *Log) AppendReplicated(b []byte) (int64, error) {
	l.mu.Lock()
	start := l.leoLocked()
	leo, gen := start, l.gen
	_, err := batch.Split(b, func(h batch.Header, raw []byte) error {
		if h.BaseOffset < leo {
			return fmt.Errorf("%w: replicated batch at offset %d, below log end %d", ErrInvalidBatch, h.BaseOffset, leo)
		}
		next, err := l.appendReplicatedLocked(raw, &h)
		if err == nil {
			leo = next
		}
		return err
	})
	if errors.Is(err, batch.ErrShort) {
		err = nil // a partial batch at the end of a response comes again
	}
	policy := l.cfg.Flush
	l.mu.Unlock()
	// Batches written before a failure are kept, and made durable like
	// the others: the caller fetches again from the new end.
	if leo > start && policy == FlushAlways {
		if serr := l.syncTo(leo, gen); serr != nil {
			return l.LogEndOffset(), serr
		}
	}
	return leo, err
}

// appendReplicatedLocked writes one checked batch at the log end.
func (l *Log) appendReplicatedLocked(b []byte, h *batch.Header) (int64, error) {
	switch {
	case l.closed:
		return 0, ErrClosed
	case l.failed != nil:
		return 0, &StorageError{Op: "append", Path: l.dir, Err: fmt.Errorf("%w: %w", ErrFailed, l.failed)}
	case int64(len(b)) > l.cfg.SegmentBytes:
		return 0, fmt.Errorf("%w: %d bytes, segment.bytes %d", ErrBatchTooLarge, len(b), l.cfg.SegmentBytes)
	}
	if l.shouldRoll(h, len(b)) {
		if err := l.rollLocked(); err != nil {
			return 0, err
		}
	}
	base := h.BaseOffset
	if epoch := h.PartitionLeaderEpoch; epoch > l.epochs.latest() {
		next := epochCache{entries: append(l.epochs.entries[:len(l.epochs.entries):len(l.epochs.entries)], epochEntry{epoch: epoch, start: base})}
		if err := l.persistEpochs(&next); err != nil {
			return 0, err
		}
		l.epochs = next
	}
	seg := l.active()
	pos := seg.size
	if err := l.writeLocked(seg, b); err != nil {
		return 0, err
	}
	seg.track(h, pos, l.cfg.IndexIntervalBytes)
	l.preallocIfNeededLocked(seg)
	l.recordTxnLocked(l.producers.Update(h, l.markerOf(h, b)))
	l.appends.Add(1)
	l.bytes.Add(int64(len(b)))
	return h.NextOffset(), nil
}
