package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testwait"
)

// TestTieredCompactionWithTransactions: the workload of
// TestCompactedTopicWithTransactions on a compacted topic tiered to MinIO
// whose local log keeps only its newest segment. Once the remote pass has
// run, the transactions are read from the bucket only, and consumers at
// read_committed as well as read_uncommitted read no aborted record and
// the latest committed value of every key.
func TestTieredCompactionWithTransactions(t *testing.T) {
	minio := miniotest.Start(t)
	for _, kv := range minio.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg := tieringTestConfig(t, t.TempDir(), minio.StoreURL(minio.NewBucket(t), "strata"))
	cfg.OffsetsTopicPartitions = 3
	cfg.TransactionStatePartitions = 3
	cfg.TransactionAbortCheckInterval = 100 * time.Millisecond
	cfg.LogCleaner.Backoff = 50 * time.Millisecond
	cfg.LogPreallocate = false
	cfg.Tiering.CompactionGrace = 100 * time.Millisecond
	r := start(t, cfg, nil)
	const topic = "txn-tcmp"
	createTopic(t, r.client(t), topic, 1, map[string]string{"cleanup.policy": "compact", "remote.storage.enable": "true",
		"segment.bytes": "4096", "local.retention.bytes": "4096", "local.retention.ms": "1", "retention.ms": "-1",
		"min.cleanable.dirty.ratio": "0.01"})
	want := map[string]string{}
	plain := produceTxnRounds(t, r, topic, "tx-tcmp", want)
	p := localPartition(r, topic, 0)
	waitStable(t, p)
	txnEnd := p.HighWatermark()
	produceFiller(t, plain, topic, want)
	testwait.Until(t, 30*time.Second, func() bool {
		return compactionRuns(t, r, topic) >= 1 && p.LocalLogStartOffset() >= txnEnd
	}, "a remote pass, and the local log to start past the transactions (at %d)", txnEnd)
	// A pass leaves a transaction whose marker is above its run whole;
	// the next passes reach it.
	testwait.Until(t, 30*time.Second, func() bool {
		_, all := consumeUntil(t, r, topic, kgo.ReadUncommitted(), "stop")
		for _, v := range all {
			if strings.HasPrefix(v, "aborted-") {
				return false
			}
		}
		return true
	}, "the bucket to hold no aborted record")
	checkCommittedView(t, r, topic, want)
	t.Logf("%d remote passes; local log starts at %d, transactions end at %d",
		int(compactionRuns(t, r, topic)), p.LocalLogStartOffset(), txnEnd)
}
