package diskless

// Commits cross agents: an uploaded object's batches go to the agents
// that lead their partitions' coordinators, one DisklessCommit each, all
// at once. A batch whose coordinator moved, is loading, or is not known
// yet (a topic created a moment ago on another agent) is sent again,
// after a pause, to wherever its coordinator is then, until the
// writer's context ends: the coordinator answers a repeated commit of
// the same object from what it stored, so nothing is committed twice.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/peer"
)

// commitRetryPause is the pause before a batch whose coordinator could
// not take it is routed again.
const commitRetryPause = 100 * time.Millisecond

// unreachableFor is how long a batch may find its coordinator surely
// unreachable (its agent not known, refusing connections, or answering
// that it does not run it or is loading it: the batch is surely not
// committed) before it is answered ErrCoordinatorUnreachable. A
// coordinator whose agent died is taken over and loaded within about a
// second when the death is a process's (agent/control/deaths.go), so
// most batches are held that long and committed, and their producers
// see latency, not an error: every produce error makes franz-go wait for
// its next metadata refresh, up to its 5 s minimum age, before it sends
// the partition's records again. The writer commits one object at a
// time, so a longer hold would hold every producer of this agent: after
// it, the batch is answered, and those of the other coordinators go on
// while this one's producer retries, as after a lost leader.
const unreachableFor = 2 * time.Second

// ErrCoordinatorUnreachable: a batch's coordinator could not be reached
// and the batch was not committed; the wire server answers
// NOT_ENOUGH_REPLICAS, and the client sends it again after its backoff.
var ErrCoordinatorUnreachable = errors.New("diskless: the partition's batch coordinator is unreachable; the batch was not committed")

var _ Committer = (*Service)(nil)

// Commit implements Committer: it routes obj's batches to their
// coordinators and returns their outcomes. Batches still without one
// when ctx ends get ctx's error.
func (s *Service) Commit(ctx context.Context, obj Object) ([]Result, error) {
	results := make([]Result, len(obj.Batches))
	pending := make([]int, len(obj.Batches))
	for i := range pending {
		pending[i] = i
	}
	unreachable := make([]time.Time, len(obj.Batches)) // since when, in a row
	for {
		pending = s.commitRound(ctx, obj, pending, results, unreachable)
		kept := pending[:0]
		for _, i := range pending {
			if !unreachable[i].IsZero() && time.Since(unreachable[i]) >= unreachableFor {
				results[i].Err = ErrCoordinatorUnreachable
				continue
			}
			kept = append(kept, i)
		}
		pending = kept
		if len(pending) == 0 {
			return results, nil
		}
		select {
		case <-ctx.Done():
			for _, i := range pending {
				results[i].Err = ctx.Err()
			}
			return results, nil
		case <-s.stop:
			return nil, ErrClosed
		case <-time.After(commitRetryPause):
		}
	}
}

// commitRound sends the pending batches to their coordinators' agents
// and returns those to send again.
// unreachable[i] is since when batch i's rounds found its coordinator
// surely unreachable, in a row; a round with an unknown outcome resets it.
func (s *Service) commitRound(ctx context.Context, obj Object, pending []int, results []Result, unreachable []time.Time) []int {
	type share struct {
		co  Coord
		req disklesswire.CommitRequest
		at  []int
		// cos are the batches' own coordinators: the partitions of
		// __diskless_state one agent leads may be at different epochs.
		cos []Coord
	}
	shares := map[int32]*share{}
	var again []int
	for _, i := range pending {
		b := obj.Batches[i]
		co, err := s.host.Coordinator(ctx, b.TopicID, b.Partition)
		if err != nil {
			markUnreachable(unreachable, i)
			again = append(again, i)
			continue
		}
		sh := shares[co.Agent]
		if sh == nil {
			sh = &share{co: co, req: disklesswire.CommitRequest{ObjectID: obj.ID, CutMs: obj.CutMs, Writer: s.self}}
			shares[co.Agent] = sh
		}
		sh.at, sh.cos = append(sh.at, i), append(sh.cos, co)
		h := b.Header
		sh.req.Batches = append(sh.req.Batches, disklesswire.CommitBatch{
			TopicID: b.TopicID, Partition: b.Partition, Position: b.Position, Size: b.Size,
			LastOffsetDelta: h.LastOffsetDelta, MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID,
			ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence, Attributes: h.Attributes,
		})
	}
	var mu sync.Mutex // guards again
	var wg sync.WaitGroup
	for _, sh := range shares {
		wg.Go(func() {
			var resp *disklesswire.CommitResponse
			err := s.peers.Do(ctx, sh.co.Agent, sh.co.Addr, func(c *peer.Client) error {
				var err error
				resp, err = c.DisklessCommit(ctx, &sh.req)
				return err
			})
			if err != nil {
				s.logger.Debug("diskless commit failed; retrying", "object", obj.ID.String(), "coordinator", sh.co.Agent, "error", err)
				notSent := errors.Is(err, peer.ErrDial)
				mu.Lock()
				for _, i := range sh.at {
					if notSent {
						markUnreachable(unreachable, i)
					} else {
						unreachable[i] = time.Time{}
					}
				}
				again = append(again, sh.at...)
				mu.Unlock()
				return
			}
			for j, i := range sh.at {
				r := resp.Results[j]
				if r.ErrorCode != 0 && retriable(r.ErrorCode) {
					mu.Lock()
					if notCommitted(r.ErrorCode) {
						markUnreachable(unreachable, i)
					} else {
						unreachable[i] = time.Time{} // the outcome may be unknown
					}
					again = append(again, i)
					mu.Unlock()
					continue
				}
				results[i] = Result{BaseOffset: r.BaseOffset, Duplicate: r.Duplicate, Err: peer.CodeError(r.ErrorCode, sh.co.Addr)}
				if r.ErrorCode == 0 {
					b := obj.Batches[i]
					s.committed(batchcoord.PartitionKey{TopicID: b.TopicID, Partition: b.Partition}, sh.cos[j], r.BaseOffset+int64(b.Header.LastOffsetDelta)+1, r.LogStart)
				}
			}
		})
	}
	wg.Wait()
	return again
}

// markUnreachable starts batch i's time unreachable unless it runs.
func markUnreachable(unreachable []time.Time, i int) {
	if unreachable[i].IsZero() {
		unreachable[i] = time.Now()
	}
}

// retriable reports whether a batch refused with code may be committed
// by sending it again, to its coordinator as then looked up.
func retriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code,
		kerr.NotLeaderForPartition.Code, kerr.UnknownServerError.Code:
		return true
	}
	return false
}

// notCommitted reports whether a coordinator agent's code for a batch
// says it was not committed: the agent does not run its coordinator, or
// is still loading it (an append that failed is NOT_ENOUGH_REPLICAS,
// batchcoord.ErrAppend, whose outcome is unknown).
func notCommitted(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.UnknownTopicOrPartition.Code:
		return true
	}
	return false
}

// committed tells the views that k holds offsets below end now, as a
// commit just answered: readers here see it without asking. The last
// stable offset is not known from a commit (a transaction may be open):
// it comes with the next index answer, which the moved high watermark
// prompts.
func (s *Service) committed(k batchcoord.PartitionKey, co Coord, end, logStart int64) {
	s.learn(k, co, batchcoord.View{HighWatermark: end, LogStart: logStart, Epoch: co.Epoch})
}
