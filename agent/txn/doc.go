// Package txn is the transaction coordinator (docs/design.md §9): Kafka's
// TransactionCoordinator for the transactional ids that hash to one
// partition of the internal topic __transaction_state, running on that
// partition's leader. It hands out producer ids and epochs to
// transactional producers (fencing older instances), records which
// partitions each transaction wrote to, and ends transactions in two
// phases: PrepareCommit or PrepareAbort made durable first, then a marker
// written to every partition of the transaction (through Markers), then
// CompleteCommit or CompleteAbort.
//
// # Records
//
// Records use Apache Kafka's schemas for __transaction_state, so Kafka's
// tools could read the partition:
//
//	key   TransactionLogKey   v0: transactional id
//	value TransactionLogValue v0: producer id, producer epoch, timeout (ms),
//	      state, partitions, last update and start time (ms)
//	      (a null value is a tombstone: the id was forgotten)
//
// The state byte is Kafka's TransactionState: 0 Empty, 1 Ongoing,
// 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort.
//
// # Failover
//
// A coordinator replays its partition when it loads. A transaction whose
// last record is a Prepare state was decided but perhaps not marked: the
// new coordinator writes its markers again (markers are idempotent in
// effect: a second marker for a closed transaction changes nothing the
// consumer sees) and completes it.
//
// # Concurrency
//
// All methods are safe for concurrent use. One mutex orders every change;
// a change is applied to memory only after its record is durable in the
// log, as in agent/group. A transaction being completed (markers in
// flight) is marked pending, and every request for it meanwhile gets
// ErrConcurrentTransactions, which clients retry. The goroutines that
// write markers belong to the Coordinator; Close stops and waits for them.
package txn
