package diskless

import (
	"context"
	"time"
)

// Drain cuts the buffer at once, refuses later Adds (and those waiting
// for room) with ErrDraining, and waits until every cut object is
// answered, or ctx ends. It may be called again, and before Close.
func (w *Writer) Drain(ctx context.Context) error {
	w.mu.Lock()
	if w.state == stateOpen {
		w.state = stateDraining
	}
	w.cut(time.Now())
	w.grant()
	for {
		if w.state == stateClosed {
			w.mu.Unlock()
			return ErrClosed
		}
		if len(w.objects) == 0 {
			w.mu.Unlock()
			return nil
		}
		finished := w.finished
		w.mu.Unlock()
		select {
		case <-finished:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
}

// Close stops the writer, in order: it refuses new and waiting Adds with
// ErrClosed, ends the uploads and the commit in flight (whose outcome
// is then unknown), waits for its goroutines, and answers every batch
// not yet answered with ErrClosed. Drain first to lose nothing. It may
// be called twice; the bucket and committer stay the caller's.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.mu.Lock()
		w.state = stateClosed
		w.grant()
		w.work.Broadcast()
		w.mu.Unlock()
		w.cancel()
		w.wg.Wait()

		w.mu.Lock()
		defer w.mu.Unlock()
		runs, _, _ := w.buf.take()
		for _, r := range runs {
			for _, p := range r.batches {
				w.settle(p, Result{}, ErrClosed, outcomeFailed)
			}
		}
		for _, obj := range w.objects {
			for _, r := range obj.runs {
				for _, p := range r.batches {
					w.settle(p, Result{}, ErrClosed, outcomeFailed)
				}
			}
			for _, p := range obj.batches {
				w.settle(p, Result{}, ErrClosed, outcomeFailed)
			}
		}
		w.objects = nil
		w.addUsed(-w.used)
		close(w.finished) // wakes Drain, which then sees stateClosed
	})
	return nil
}
