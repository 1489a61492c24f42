package loadgen

// Transactional producers (--txn-records, issue 21's benchmark row): each
// producer has a transactional id of its own and commits every
// TxnRecords of its records, so a closed-loop run measures what a
// transactional producer's commits cost against the same workload without
// them. A record counts as acknowledged once its transaction commits; its
// latency is still its produce acknowledgement's.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnOpts gives producer p a transactional id in a transactional run. The
// id names the run's topic, so that no run fences another's producers.
func txnOpts(cfg Config, topic string, p int) []kgo.Opt {
	if cfg.TxnRecords <= 0 {
		return nil
	}
	return []kgo.Opt{kgo.TransactionalID(fmt.Sprintf("strata-bench-%s-%d", topic, p))}
}

// endTxn flushes what the transaction holds and commits it, within the
// drain timeout.
func endTxn(ctx context.Context, cl *kgo.Client, cfg Config) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush before commit: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
