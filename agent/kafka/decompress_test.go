package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
)

// A compressed batch that finds the budget taken waits until its request's
// deadline and gets REQUEST_TIMED_OUT (retriable); once the budget is back
// it goes through. An uncompressed batch never waits for it.
func TestDecompressionBudgetWaits(t *testing.T) {
	budget := newDecompressionBudget(2 * decompressedFloor)
	cfg := metadata.Resolved{MaxMessageBytes: 1 << 20, TimestampType: "CreateTime",
		TimestampBeforeMaxMs: 1 << 62, TimestampAfterMaxMs: 1 << 62, CompressionType: "producer"}
	build := func(c batch.Codec) []byte {
		opts := batch.DefaultBuildOptions()
		opts.Codec, opts.BaseTimestamp = c, time.Now().UnixMilli()
		raw, err := batch.Build(opts, []batch.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	hold, err := budget.acquire(context.Background(), decompressedLimit(cfg.MaxMessageBytes, budget))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, release, err := prepareBatch(ctx, cfg, build(batch.CodecGzip), time.Now(), budget)
	release()
	if code := errorCode(err); code != kerr.RequestTimedOut.Code {
		t.Fatalf("gzip batch with the budget taken: %v (code %d), want REQUEST_TIMED_OUT", err, code)
	}
	_, release, err = prepareBatch(ctx, cfg, build(batch.CodecNone), time.Now(), budget)
	release()
	if err != nil {
		t.Fatalf("uncompressed batch with the budget taken: %v", err)
	}
	hold()
	_, release, err = prepareBatch(context.Background(), cfg, build(batch.CodecGzip), time.Now(), budget)
	release()
	if err != nil {
		t.Fatalf("gzip batch with the budget back: %v", err)
	}
	// release gave the whole limit back.
	if !budget.sem.TryAcquire(budget.size) {
		t.Fatal("budget not fully released")
	}
}
