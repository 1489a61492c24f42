package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionalSmoke: a second of closed-loop transactional produce
// against Strata and kfake commits every record it counts; on Strata the
// producers' transactional ids are on record with committed transactions
// (kfake serves no DescribeTransactions), so the run was transactional,
// not plain produce.
func TestTransactionalSmoke(t *testing.T) {
	for _, system := range []string{SystemKfake, "strata"} {
		t.Run(system, func(t *testing.T) {
			target := startTarget(t, system)
			cfg := DefaultConfig()
			cfg.Scenario, cfg.Duration, cfg.TxnRecords, cfg.Producers = "txn", time.Second, 50, 2
			cfg.DrainTimeout = 30 * time.Second
			var committed []string
			cfg.inspect = func(ctx context.Context, topic string) {
				if system != "strata" {
					return
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(target.Seeds()...))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				// EndTxn answers once PrepareCommit is on record; the
				// markers follow, so on a loaded machine the last
				// transaction may still be completing: look again.
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
					txns, err := kadm.NewClient(cl).DescribeTransactions(ctx)
					if err != nil {
						t.Errorf("DescribeTransactions: %v", err)
						return
					}
					committed = committed[:0]
					for _, d := range txns.Sorted() {
						if strings.HasPrefix(d.TxnID, "strata-bench-"+topic) && d.State == "CompleteCommit" {
							committed = append(committed, d.TxnID)
						}
					}
					if len(committed) == cfg.Producers || time.Now().After(deadline) {
						return
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, target, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res.Summary())
			if res.Errors != 0 || res.Acked == 0 || res.Sent != res.Acked {
				t.Fatalf("sent %d, committed %d, errors %d (%s)", res.Sent, res.Acked, res.Errors, res.FirstError)
			}
			if system == "strata" && len(committed) != cfg.Producers {
				t.Fatalf("transactional ids with a committed transaction: %v, want one per producer (%d)", committed, cfg.Producers)
			}
		})
	}
}
