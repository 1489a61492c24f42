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
// Router (router.go) carries what crosses agents for transactions, here
// or over the agent's pooled inter-agent connections (agent/peer): a
// partition leader's KIP-890 verification to the coordinator of the
// transactional id, and a coordinator's markers to the partition leaders
// (it implements Markers). The agent it runs in is a Host: who leads
// what, and the local coordinator and marker write. The verification
// guards are the partition's (agent/partition/txnguard.go).
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
//	      v1 (flexible) adds tagged fields, written for a transaction of
//	      transaction version 2: PreviousProducerId (tag 0),
//	      NextProducerId (tag 1), ClientTransactionVersion (tag 2)
//
// The state byte is Kafka's TransactionState: 0 Empty, 1 Ongoing,
// 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort.
//
// # Transaction versions
//
// A transaction follows transaction version 1, or 2 (KIP-890 part 2)
// when the requests that add to and end it say so (AddPartitions and
// EndTxn's tv2). Under version 2 every end bumps the producer epoch: the
// Prepare record carries the bumped epoch (and, when the epoch is
// exhausted, the next producer id), the markers are written at it, and
// Complete moves the producer to the next id at epoch 0 if there is one.
// The epoch of a later EndTxn tells a retry from the next transaction's
// end (endtxn.go).
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
// All methods are safe for concurrent use. One mutex guards the state; a
// change is applied to memory only after its record is durable in the
// log, as in agent/group. The mutex is released while a record is
// appended (an acks=all round trip), so transactional ids that share the
// partition do not wait for each other; the id being written is pending
// meanwhile (Kafka's pendingState), and every request for it waits for
// the write, so one id's changes are decided and logged one at a time. A
// transaction being completed (markers in flight) is marked completing,
// and requests for it meanwhile get ErrConcurrentTransactions, which
// clients retry. The goroutines that
// write markers belong to the Coordinator; Close stops and waits for them.
package txn
