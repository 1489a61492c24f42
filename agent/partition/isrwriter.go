package partition

// The ISR writer: the machine proposes an ISR change (a follower caught up
// or fell behind), and the partition writes it to state.json by CAS in a
// goroutine of its own, outside p.mu, retrying store errors until it
// lands, loses the CAS or is superseded. Close waits for the writers.

import (
	"context"
	"errors"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
)

const (
	// isrWriteTimeout bounds one attempt to write an ISR change.
	isrWriteTimeout = 10 * time.Second
	// isrRetryMin and isrRetryMax bound the wait between attempts.
	isrRetryMin = 50 * time.Millisecond
	isrRetryMax = 2 * time.Second
)

// writeISR starts writing change. p.mu is write-locked (publishLocked).
func (p *Partition) writeISR(change replica.ISRChange) {
	p.fetching.Add(1)
	go func() {
		defer p.fetching.Done()
		backoff := isrRetryMin
		for p.pendingISR(change) {
			err := p.tryWriteISR(change)
			if err == nil {
				return
			}
			p.logger.Warn("ISR change not written; retrying", "topic", p.topic, "partition", p.index, "op", change.Op, "replicas", change.Replicas, "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-p.stopped:
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, isrRetryMax)
		}
	}()
}

func (p *Partition) tryWriteISR(change replica.ISRChange) error {
	ctx, cancel := context.WithTimeout(context.Background(), isrWriteTimeout)
	defer cancel()
	st, etag := p.StateAndETag()
	if st.StateEpoch != change.From.StateEpoch {
		p.abortISR(change) // the state moved on under it
		return nil
	}
	next := toMetadataState(change.To)
	// An ISR change keeps what the replica machine does not track: a
	// reassignment in progress (its Adding too, or a cancel would keep the
	// new replicas and the balancer would undercount moves in flight) and
	// the replication factor.
	next.Target, next.Adding, next.ReplicationFactor = st.Target, st.Adding, st.ReplicationFactor
	newETag, err := p.cluster.WriteState(ctx, p, next, etag)
	if errors.Is(err, metadata.ErrConflict) {
		// Replaced: re-read and apply, which drops the proposal; a leader
		// whose epoch is gone steps down here.
		p.metrics.casLost.Inc()
		p.logger.Warn("ISR change lost the CAS; re-reading the partition state", "topic", p.topic, "partition", p.index, "op", change.Op)
		return p.cluster.ReloadState(ctx, p)
	}
	if err != nil {
		return err
	}
	if err := p.confirmISR(next, newETag); err != nil {
		return p.cluster.ReloadState(ctx, p)
	}
	p.metrics.isrChanges.WithLabelValues(change.Op.String()).Inc()
	p.logger.Info("ISR changed", "topic", p.topic, "partition", p.index, "op", change.Op, "replicas", change.Replicas, "isr", change.To.ISR, "leader_epoch", change.To.LeaderEpoch)
	p.cluster.AnnounceState(p, change.To.StateEpoch)
	return nil
}
