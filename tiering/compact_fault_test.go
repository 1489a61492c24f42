package tiering

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// manifestBucket, while armed, runs before once before the first PUT of a
// manifest object (a page or the head) that names a compacted entry: the
// swap, after the pass has written all its objects; and answers that
// swap's head PUT with afterHead though the PUT took place (an answer
// lost, or a client retry that found its own write).
type manifestBucket struct {
	objstore.Bucket
	mu        sync.Mutex
	armed     bool
	before    func()
	afterHead error
}

func (b *manifestBucket) Put(ctx context.Context, key string, data []byte, o objstore.PutOptions) (string, error) {
	b.mu.Lock()
	armed := b.armed && strings.Contains(key, "manifest/") && bytes.Contains(data, []byte(`"compacted":true`))
	var before func()
	if armed {
		before, b.before = b.before, nil
	}
	afterHead := b.afterHead
	if armed && strings.HasSuffix(key, "head.json") {
		b.armed, b.afterHead = false, nil
	} else {
		afterHead = nil
	}
	b.mu.Unlock()
	if before != nil {
		before()
	}
	etag, err := b.Bucket.Put(ctx, key, data, o)
	if err == nil && afterHead != nil {
		return "", afterHead
	}
	return etag, err
}

// TestCompactSwapAnsweredWithAnError: a head PUT that took place but
// answered an error leaves the compacted objects it named in the bucket,
// whether the error says nothing (lost answer) or looks like a lost race
// (the client retried and found its own write): the manifest names them,
// every offset reads, and the janitor past its grace deletes none of them.
func TestCompactSwapAnsweredWithAnError(t *testing.T) {
	for name, answer := range map[string]error{
		"lost answer":      errors.New("connection reset by peer"),
		"retried into 412": objstore.ErrPreconditionFailed,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			mb := &manifestBucket{Bucket: objstore.NewMem()}
			_, p, _ := tieredLog(t, mb, 6)
			mb.mu.Lock()
			mb.armed, mb.afterHead = true, answer
			mb.mu.Unlock()
			if _, err := p.Compact(ctx, compactOptions(t)); err == nil {
				t.Fatal("the pass reported no error")
			}
			_, all := manifestEntries(t, p)
			if !all[0].Compacted {
				t.Fatalf("the swap did not take place: %+v", all)
			}
			checkCovers(t, p, 60)
			if _, err := p.CleanOrphans(ctx, time.Now().Add(p.t.cfg.OrphanGrace+p.t.cfg.CompactionGrace+time.Hour)); err != nil {
				t.Fatal(err)
			}
			checkCovers(t, p, 60)
		})
	}
}

// TestJanitorSparesAPassInProgress: the janitor running while a pass has
// written its objects but not swapped them in (a pass can outlast the
// orphan grace) deletes none of them.
func TestJanitorSparesAPassInProgress(t *testing.T) {
	ctx := context.Background()
	mb := &manifestBucket{Bucket: objstore.NewMem()}
	_, p, _ := tieredLog(t, mb, 6)
	var deleted int
	var janitorErr error
	mb.mu.Lock()
	mb.armed = true
	mb.before = func() {
		deleted, janitorErr = p.CleanOrphans(ctx, time.Now().Add(p.t.cfg.OrphanGrace+time.Hour))
	}
	mb.mu.Unlock()
	if _, err := p.Compact(ctx, compactOptions(t)); err != nil {
		t.Fatal(err)
	}
	if janitorErr != nil || deleted != 0 {
		t.Fatalf("the janitor deleted %d objects of the pass in progress (%v)", deleted, janitorErr)
	}
	checkCovers(t, p, 60)
}

// TestCompactRetiresAtTheSwap: the compaction grace of replaced objects
// runs from the swap, not from the pass's start, which may be long before.
func TestCompactRetiresAtTheSwap(t *testing.T) {
	ctx := context.Background()
	_, p, _ := tieredLog(t, objstore.NewMem(), 6)
	o := compactOptions(t)
	o.Now = time.Now().Add(-time.Hour) // a pass that started an hour ago
	before := time.Now().UnixMilli()
	if _, err := p.Compact(ctx, o); err != nil {
		t.Fatal(err)
	}
	h, _ := manifestEntries(t, p)
	if len(h.Retired) == 0 {
		t.Fatal("nothing retired")
	}
	for _, r := range h.Retired {
		if r.RetiredMs < before {
			t.Fatalf("%s retired at %d, before the swap (%d)", r.Key, r.RetiredMs, before)
		}
	}
}
