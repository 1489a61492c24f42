package diskless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// runUploads is one of UploadsInFlight upload goroutines: each takes the
// oldest cut object no one uploads yet, so uploads start in cut order
// but may end in any.
func (w *Writer) runUploads(ctx context.Context) {
	defer w.wg.Done()
	for {
		obj := w.nextUpload()
		if obj == nil {
			return
		}
		w.upload(ctx, obj)
	}
}

// nextUpload waits for an object to upload; nil once the writer closes.
func (w *Writer) nextUpload() *object {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.state == stateClosed {
			return nil
		}
		for _, obj := range w.objects {
			if obj.state == objectCut {
				obj.state = objectUploading
				return obj
			}
		}
		w.work.Wait()
	}
}

// upload encodes obj and stores it, then hands it to the commit
// goroutine as uploaded or failed. If the writer closes meanwhile, obj
// is left as it is for Close to answer.
func (w *Writer) upload(ctx context.Context, obj *object) {
	// obj.runs and their batches' bytes are this goroutine's while the
	// object is objectUploading: nothing else reads or changes them.
	data, h, err := sharedobj.Encode(obj.id, w.cfg.Agent, obj.cut.UnixMilli(), parts(obj.runs))
	if err != nil {
		// Add checked every batch and cut before MaxRuns: a bug.
		panic(fmt.Sprintf("diskless: encode object %s: %v", obj.id, err))
	}
	w.mu.Lock()
	obj.header = h
	obj.batches = place(obj.runs, h)
	obj.runs = nil
	for _, p := range obj.batches {
		p.raw = nil // the object's bytes hold them now
	}
	w.mu.Unlock()

	start := time.Now()
	err = w.put(ctx, obj, data)
	if ctx.Err() != nil {
		return // closing
	}
	if err == nil {
		w.metrics.uploaded.Inc()
		w.metrics.objectBytes.Add(float64(len(data)))
		w.metrics.upload.Observe(time.Since(start).Seconds())
		if w.OnUploaded != nil {
			w.OnUploaded(obj.id, data)
		}
	} else {
		w.logger.Error("diskless object upload failed; its batches fail", "object", obj.id.String(), "bytes", len(data), "err", err)
	}
	w.mu.Lock()
	if err == nil {
		obj.state = objectUploaded
	} else {
		obj.state = objectFailed
		obj.err = fmt.Errorf("%w: object %s: %w", ErrUpload, obj.id, internal(err))
	}
	w.work.Broadcast()
	w.mu.Unlock()
}

// errTaken is a create-once PUT that found another object under the key.
var errTaken = errors.New("the key holds another object")

// put stores data under obj's key with one create-once PUT, retried
// with backoff until obj's deadline.
//
// The key is a fresh UUIDv7 with 74 random bits, so a PUT refused
// because the key exists means, in practice, that an earlier attempt of
// this very PUT was stored and its answer lost (a timeout, a dropped
// connection). So a refusal is not retried blindly: the object is read
// back and, if it holds our bytes, it is ours and stored. Other bytes
// would mean a broken random source or a store that lies; overwriting
// could destroy another writer's committed object, so the upload fails
// at once. A key that turns out missing is retried like any failure.
func (w *Writer) put(ctx context.Context, obj *object, data []byte) error {
	ctx, cancel := context.WithDeadline(ctx, obj.deadline)
	defer cancel()
	key := obj.id.Key()
	for failures := 1; ; failures++ {
		_, err := w.bucket.Put(ctx, key, data, objstore.PutOptions{IfAbsent: true})
		if err == nil {
			return nil
		}
		if objstore.IsPreconditionFailed(err) {
			stored, _, gerr := w.bucket.Get(ctx, key)
			switch {
			case gerr == nil && bytes.Equal(stored, data):
				return nil
			case gerr == nil:
				return fmt.Errorf("%w: %w", errTaken, err)
			}
			err = fmt.Errorf("%w; reading it back: %w", err, gerr)
		}
		if ctx.Err() != nil {
			return err
		}
		wait := jitter(backoff(failures))
		w.logger.Warn("diskless object upload failed; retrying", "object", obj.id.String(), "failures", failures, "retry_in", wait, "err", err)
		if !sleep(ctx, wait) {
			return err
		}
	}
}

// internal turns an error that ends in the writer's own deadline into
// plain text, so that a caller who checks a wait's error for its own
// ctx's end (errors.Is(err, context.DeadlineExceeded)) is not misled.
func internal(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return errors.New(err.Error())
	}
	return err
}

// jitter spreads retries of agents that failed together over [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
