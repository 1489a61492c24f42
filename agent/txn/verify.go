package txn

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Verify reports, for each of parts, whether it is in the ongoing
// transaction of producerID at epoch, without adding it: KIP-890 part 1's
// check, which a partition leader asks before it appends a producer's
// first transactional batch, so that a late batch of a transaction that
// already ended cannot open one the coordinator never ends. An error
// concerns every partition: a wrong producer id or a fenced epoch, or
// ErrConcurrentTransactions while the transaction's markers are written
// (the leader's client retries, and then learns it ended).
func (c *Coordinator) Verify(ctx context.Context, id string, producerID int64, epoch int16, parts []TopicPartition) ([]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// An add of the partition may be under way: the answer waits for it.
	t, err := c.checkProducerLocked(ctx, id, producerID, epoch)
	if err != nil {
		return nil, err
	}
	if t.completing || t.State == kmsg.TransactionStatePrepareCommit || t.State == kmsg.TransactionStatePrepareAbort {
		return nil, fmt.Errorf("%w: %q is %s", ErrConcurrentTransactions, id, t.State)
	}
	in := make([]bool, len(parts))
	if t.State != kmsg.TransactionStateOngoing {
		return in, nil
	}
	for i, tp := range parts {
		in[i] = slices.Contains(t.Partitions, tp)
	}
	return in, nil
}
