// Package coord owns the coordinators this agent runs: a group
// coordinator (agent/group) for each partition of __consumer_offsets it
// leads, a transaction coordinator (agent/txn) for each partition of
// __transaction_state it leads, and the producer ids it hands out. It is
// the wire server's Groups, Transactions and ProducerIDs families
// (agent/kafka), and it routes what crosses agents for transactions
// (txn.Router) over the agent's peer connections.
//
// The name is short for "coordinators": agent/group and agent/txn are the
// coordinators themselves, state machines over a coordlog.Log that know
// nothing of topics, partitions or leaders; this package decides which of
// them run on this agent, on which partition, since which leader epoch,
// and answers where the others run (FindCoordinator).
//
// # Load and unload
//
// Partition group.Partition(id, N) of an internal topic coordinates id
// (Kafka's hash for both topics), and the agent that leads it is its
// coordinator. A coordinator is loaded, its partition replayed, by the
// first request that needs it on that leader; a transaction coordinator
// is also loaded by CheckTransactions, so that a new leader completes the
// transactions its predecessor prepared without waiting for a client.
// Each remembers the leader epoch it was loaded at: when another agent
// led the partition in between, its memory is stale, and the next lookup
// loads it again. A new leader loads nothing until its high watermark
// reaches what the previous leader committed
// (partition.CommittedEpochStart). Unload stops the coordinator of a
// partition whose leadership moved away (the agent calls it from
// control.Host.LeaderMovedAway and when a replica leaves the agent).
//
// The errors, which the wire server maps to Kafka codes:
//
//	dataplane.ErrNotCoordinator          this agent does not lead the partition   NOT_COORDINATOR
//	dataplane.ErrCoordinatorNotAvailable the load failed, or the leader is not live COORDINATOR_NOT_AVAILABLE
//	group.ErrLoading                     the new leader waits for its followers   COORDINATOR_LOAD_IN_PROGRESS
//	group.ErrClosed, txn.ErrClosed       after Close (or on an unloaded coordinator)
//
// # Concurrency and life cycle
//
// Every exported method is safe for concurrent use. Each topic's
// coordinators sit behind one mutex (set.mu), held while a partition
// loads so that it loads once. Lock order: the topic table's adminMu
// (Unload runs under it when a replica leaves the agent), then a set's
// mutex, then the table's mu and the partition's locks (a load reads its
// partition and may look topics up). The two sets' mutexes are never
// held together.
// The package starts no goroutine: the coordinators' timers and marker
// writers are their own, and the agent runs CheckTransactions and
// ExpireOffsets from its loops. Close stops the transaction coordinators
// (waiting for their marker writers), then the group coordinators; later
// lookups fail with ErrClosed. The peer connections the Router borrows
// are the agent's, which closes them after Close.
package coord
