package partition

// The follower's fetcher: one goroutine per local replica, alive as long
// as the partition, carrying out the machine's FollowerAction one at a
// time (docs/design.md §6). It does the epoch queries, truncations and
// restarts itself; for a fetch it hands the partition to the agent's
// fetch loop of that leader (fetchers.go), which fetches it with every
// other partition followed there, and waits until the loop hands it back
// or its state changes. Actions that touch the log (truncate, restart,
// append fetched records) are done under the partition's write lock and
// only while the action is still the current one, so a fetcher racing a
// leadership change never cuts or extends the log for a superseded epoch.
// Network calls happen outside the lock.

import (
	"context"
	"errors"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/replica"
)

const (
	// replicaFetchMaxWait is how long a follower's fetch long-polls at
	// most (replicaFetchWait); a produce on the leader answers it at once.
	replicaFetchMaxWait = 500 * time.Millisecond
	// replicaFetchMaxBytes bounds one partition of a follower's fetch
	// (replicaFetchResponseMaxBytes, the whole answer).
	replicaFetchMaxBytes = 8 << 20
	// replicaRequestSlack is how much longer than a long poll a request
	// to the leader may take before the follower gives up on it.
	replicaRequestSlack = 5 * time.Second
	// fetcherBackoffMax bounds the wait after a failed request.
	fetcherBackoffMax = time.Second
)

// followerAction returns the current action and the channel closed at the
// next state change.
func (p *Partition) followerAction() (replica.FollowerAction, <-chan struct{}, <-chan struct{}) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.rep.FollowerAction(), p.changed, p.stopped
}

// withAction runs fn under the write lock if act is still current.
func (p *Partition) withAction(act replica.FollowerAction, fn func() (replica.FollowerAction, error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return log.ErrClosed
	}
	if p.rep.FollowerAction() != act {
		return replica.ErrStaleAction
	}
	_, err := fn()
	p.hw.Store(p.rep.HighWatermark())
	return err
}

// runFetcher follows p's leader until p closes.
func (p *Partition) runFetcher() {
	select {
	case <-p.started:
	case <-p.stopped:
		return
	}
	f := fetcher{p: p}
	defer f.closeClient()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-p.stopped
		cancel()
	}()
	for ctx.Err() == nil {
		act, changed, _ := p.followerAction()
		err := f.do(ctx, act, changed)
		if err == nil || ctx.Err() != nil {
			f.backoff = 0
			continue
		}
		if !errors.Is(err, replica.ErrStaleAction) {
			f.failed(ctx, act, err, changed)
		}
	}
}

type fetcher struct {
	p       *Partition
	conn    peerConn
	backoff time.Duration
	lastErr string
}

func (f *fetcher) closeClient() { f.conn.close() }

// do carries out one action.
func (f *fetcher) do(ctx context.Context, act replica.FollowerAction, changed <-chan struct{}) error {
	p := f.p
	switch act.Kind {
	case replica.ActionWait:
		f.closeClient()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		return nil
	case replica.ActionTruncate:
		return p.withAction(act, func() (replica.FollowerAction, error) {
			// Never below the log start: a log restored from the bucket
			// has no epochs and truncates "to its HW", which may be older
			// than its start; the records below are in the bucket.
			if err := p.log.TruncateTo(max(act.Offset, p.log.LogStartOffset())); err != nil {
				return act, err
			}
			p.logger.Info("follower truncated its log", "topic", p.topic, "partition", p.index, "offset", act.Offset, "leader", act.Leader, "leader_epoch", act.LeaderEpoch)
			return p.rep.Applied(act, p.log)
		})
	case replica.ActionRestartAt:
		restarted := time.Now()
		err := p.withAction(act, func() (replica.FollowerAction, error) {
			if err := p.log.TruncateTo(p.log.LogStartOffset()); err != nil {
				return act, err
			}
			if err := p.log.RestartAt(act.Offset, nil); err != nil {
				return act, err
			}
			p.logger.Info("follower restarted its log at the leader's local start", "topic", p.topic, "partition", p.index, "offset", act.Offset)
			return p.rep.Applied(act, p.log)
		})
		if r := p.remote.Load(); err == nil && r != nil {
			// The leader's local start is at or below the bucket's end,
			// which may be past the one this replica last read. Outside
			// the lock, and bounded: a read meanwhile re-reads it too.
			rctx, cancel := context.WithTimeout(ctx, replicaFetchMaxWait+replicaRequestSlack)
			r.Refresh(rctx, restarted) // a failure is logged there
			cancel()
		}
		return err
	case replica.ActionFetch:
		f.closeClient() // the loop fetches over a connection of its own
		p.fetchers.follow(ctx, p, act, changed)
		return nil
	}
	// A request ends when the state changes (the leader may be paused or
	// cut off and never answer: this replica must follow the new one) or
	// when it takes far longer than a long poll should.
	ctx, cancel := context.WithTimeout(ctx, replicaFetchMaxWait+replicaRequestSlack)
	defer cancel()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	client, err := f.connect(ctx, act.Leader)
	if err != nil {
		return err
	}
	if act.Kind == replica.ActionQueryEpoch {
		epoch, end, err := client.EpochEndOffset(ctx, p.topic, p.index, p.agentID, act.LeaderEpoch, act.Epoch)
		if err != nil {
			return err
		}
		return p.withAction(act, func() (replica.FollowerAction, error) {
			return p.rep.EpochAnswered(act, replica.EpochEndOffset{Epoch: epoch, EndOffset: end}, p.log)
		})
	}
	return nil
}

// applyFetched applies a leader's answer for one partition, fetched for
// act: its records appended, the machine told the leader's HW, and the
// log start moved up to the leader's. Under the write lock, only while
// act is current.
func (p *Partition) applyFetched(act replica.FollowerAction, res peer.FetchedPartition) error {
	return p.withAction(act, func() (replica.FollowerAction, error) {
		if len(res.Records) > 0 {
			if _, err := p.log.AppendReplicated(res.Records); err != nil {
				return act, err
			}
			p.metrics.copiedBytes.WithLabelValues(p.topic).Add(float64(len(res.Records)))
			p.load.AddIn(len(res.Records))
			if p.copiedFrom.CompareAndSwap(0, act.Offset+1) {
				p.logger.Info("follower: copying from the leader", "topic", p.topic, "partition", p.index,
					"from_offset", act.Offset, "leader_log_end", res.HighWatermark)
			}
		}
		next, err := p.rep.Fetched(act, res.HighWatermark, p.log)
		// The leader's log start moved (DeleteRecords, retention of a
		// topic without tiering): so does this copy's, up to what
		// it holds. With tiering the manifest carries it instead.
		if err == nil && p.remote.Load() == nil && res.LogStartOffset > p.log.LogStartOffset() {
			if derr := p.log.DeleteRecordsBefore(min(res.LogStartOffset, p.log.LogEndOffset())); derr != nil {
				p.logger.Warn("follower: move log start", "topic", p.topic, "partition", p.index, "err", derr)
			}
		}
		return next, err
	})
}

// follow hands p, whose action is act (a fetch), to the fetch loop of
// act's leader and waits until the loop hands it back, its action is no
// longer a fetch from that leader, or ctx ends. A state change that keeps
// the fetch (an ISR change) keeps p in the loop. After Close, p waits for
// its next state instead.
func (fs *Fetchers) follow(ctx context.Context, p *Partition, act replica.FollowerAction, changed <-chan struct{}) {
	m := fs.join(p, act.Leader)
	if m == nil {
		select {
		case <-changed:
		case <-ctx.Done():
		}
		return
	}
	for {
		select {
		case <-m.released:
			return
		case <-ctx.Done():
			m.leave()
			return
		case <-changed:
			var next replica.FollowerAction
			next, changed, _ = p.followerAction()
			if next.Kind != replica.ActionFetch || next.Leader != act.Leader {
				m.leave()
				return
			}
		}
	}
}

// connect returns a connection to leader, dialling when needed.
func (f *fetcher) connect(ctx context.Context, leader int32) (*peer.Client, error) {
	addr, err := f.p.cluster.AgentAddr(ctx, leader)
	if err != nil {
		return nil, err
	}
	return f.conn.get(ctx, leader, addr, f.p.agentID, f.p.peer)
}

// failed handles a failed action: the connection is dropped, the state is
// re-read when the leader says this agent is behind (or does not answer
// as leader), and the next attempt waits a little longer each time, or
// until the state changes.
func (f *fetcher) failed(ctx context.Context, act replica.FollowerAction, err error, changed <-chan struct{}) {
	f.closeClient()
	if errors.Is(err, dataplane.ErrNotLeader) || errors.Is(err, replica.ErrFencedLeaderEpoch) || errors.Is(err, dataplane.ErrUnknownTopicOrPartition) {
		f.p.cluster.RefreshState(f.p)
	}
	if msg := err.Error(); msg != f.lastErr {
		f.lastErr = msg
		f.p.logger.Warn("follower fetch failed", "topic", f.p.topic, "partition", f.p.index, "action", act.String(), "err", err)
	}
	f.backoff = min(max(2*f.backoff, 50*time.Millisecond), fetcherBackoffMax)
	t := time.NewTimer(f.backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-ctx.Done():
	}
}
