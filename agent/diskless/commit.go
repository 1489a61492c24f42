package diskless

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runCommits is the one commit goroutine. It commits the object at the
// head of the queue once its upload is done, and only then looks at the
// next: commits go in cut order, one object at a time, even when a later
// object's upload finished first, so that a producer's batches reach
// their coordinator in the order the producer sent them. An object whose
// upload failed is answered in its turn too.
func (w *Writer) runCommits(ctx context.Context) {
	defer w.wg.Done()
	for {
		obj := w.nextCommit()
		if obj == nil {
			return
		}
		w.commit(ctx, obj)
	}
}

// nextCommit waits for the head of the queue to be uploaded or failed;
// nil once the writer closes.
func (w *Writer) nextCommit() *object {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.state == stateClosed {
			return nil
		}
		if len(w.objects) > 0 {
			if obj := w.objects[0]; obj.state == objectUploaded || obj.state == objectFailed {
				return obj
			}
		}
		w.work.Wait()
	}
}

// commit answers obj's batches: with the upload's error, with the
// committer's results, or with ErrCommitTimeout once obj's deadline
// passes. If the writer closes first, obj is left for Close to answer.
func (w *Writer) commit(ctx context.Context, obj *object) {
	w.mu.Lock()
	if obj.state == objectFailed {
		for _, p := range obj.batches {
			w.settle(p, Result{}, obj.err, outcomeFailed)
		}
		w.finish(obj)
		w.mu.Unlock()
		return
	}
	if !time.Now().Before(obj.deadline) {
		// It waited its whole timeout behind earlier objects: coordinators
		// would refuse it, so it is not sent at all.
		err := fmt.Errorf("%w: object %s waited for earlier commits", ErrCommitTimeout, obj.id)
		for _, p := range obj.batches {
			w.settle(p, Result{}, err, outcomeTimedOut)
		}
		w.finish(obj)
		w.mu.Unlock()
		return
	}
	// From here the list of batches is fixed: every attempt sends the
	// same object, and a waiter that gives up no longer drops its batch.
	var send []*pending
	for _, p := range obj.batches {
		if !p.settled {
			p.sent = true
			send = append(send, p)
		}
	}
	w.mu.Unlock()

	results, err := w.commitWithRetries(ctx, obj, send)
	if ctx.Err() != nil {
		return // closing
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		outcome := outcomeFailed
		if errors.Is(err, ErrCommitTimeout) {
			outcome = outcomeTimedOut
		}
		w.logger.Error("diskless object commit failed; its batches fail", "object", obj.id.String(), "batches", len(send), "err", err)
		for _, p := range send {
			w.settle(p, Result{}, err, outcome)
		}
	default:
		for i, p := range send {
			r := results[i]
			outcome := outcomeCommitted
			switch {
			case r.Err != nil:
				outcome = outcomeRefused
			case r.Duplicate:
				outcome = outcomeDuplicate
			}
			w.settle(p, r, nil, outcome)
		}
	}
	w.finish(obj)
}

// commitWithRetries calls the committer until it answers or obj's
// deadline passes; then the error wraps ErrCommitTimeout. Nothing is
// sent for an object none of whose batches is still wanted: it stays in
// the bucket, unreferenced, for the orphan janitor.
func (w *Writer) commitWithRetries(ctx context.Context, obj *object, send []*pending) ([]Result, error) {
	if len(send) == 0 {
		return nil, nil
	}
	view := Object{ID: obj.id, CutMs: obj.header.CutMs, Header: obj.header, Batches: make([]Placed, len(send))}
	for i, p := range send {
		view.Batches[i] = p.placed
	}
	ctx, cancel := context.WithDeadline(ctx, obj.deadline)
	defer cancel()
	for failures := 1; ; failures++ {
		results, err := w.committer.Commit(ctx, view)
		if err == nil {
			if len(results) != len(send) {
				// The results come from coordinators over the network: a
				// wrong count fails the batches rather than the agent.
				return nil, fmt.Errorf("diskless: object %s: the committer answered %d results for %d batches", obj.id, len(results), len(send))
			}
			return results, nil
		}
		// A retry that could only start at or past the deadline would be
		// refused: answer now instead of sleeping until then.
		wait := jitter(backoff(failures))
		if ctx.Err() != nil || !time.Now().Add(wait).Before(obj.deadline) {
			return nil, fmt.Errorf("%w: object %s, %d attempts: %w", ErrCommitTimeout, obj.id, failures, internal(err))
		}
		w.logger.Warn("diskless object commit failed; retrying", "object", obj.id.String(), "failures", failures, "retry_in", wait, "err", err)
		if !sleep(ctx, wait) {
			return nil, fmt.Errorf("%w: object %s, %d attempts: %w", ErrCommitTimeout, obj.id, failures, internal(err))
		}
	}
}
