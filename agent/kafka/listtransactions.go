package kafka

// ListTransactions (key 66), versions 0-1: the transactional ids of the
// coordinators loaded on this agent (KIP-664; clients ask every agent),
// filtered by state, producer id and (v1, KIP-994) by having run longer
// than DurationFilterMillis. Unknown state names come back in
// UnknownStateFilters, as in Kafka. Version 2 (a transactional id
// pattern) is not served.
//
// Authorization (authorize.go): ids the principal may not DESCRIBE are
// left out, as in Kafka.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnStateNames are the states ListTransactions filters by.
var txnStateNames = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func handleListTransactions(ctx context.Context, s *Server, r *request, req *kmsg.ListTransactionsRequest) (*kmsg.ListTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	for _, f := range req.StateFilters {
		if !slices.Contains(txnStateNames, f) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	now := time.Now()
	for _, c := range s.txns.TxnCoordinators() {
		for _, m := range c.List() {
			switch {
			case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, m.State.String()):
				continue
			case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.ProducerID):
				continue
			case r.version >= 1 && req.DurationFilterMillis >= 0 &&
				(m.Start.IsZero() || now.Sub(m.Start) < time.Duration(req.DurationFilterMillis)*time.Millisecond):
				continue
			case !s.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, m.TransactionalID):
				continue
			}
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = m.TransactionalID, m.ProducerID, m.State.String()
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		if a.TransactionalID < b.TransactionalID {
			return -1
		}
		if a.TransactionalID > b.TransactionalID {
			return 1
		}
		return 0
	})
	return resp, nil
}
