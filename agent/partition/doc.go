// Package partition is one local replica of a partition (docs/design.md §6):
// its log, the state.json it last applied, the replica state machine
// (agent/replica) that decides from both what it serves, the follower's
// fetcher, the ISR writer, and its tiering state. Fetchers are the
// agent's fetch loops, one per leader agent, to which every partition
// following that leader hands its fetches (fetchers.go). It implements
// dataplane.Partition and tiering.Source. Peer is a partition of which the
// agent holds no replica.
//
// A leader also owns the KIP-890 verification guards of its transactional
// producers (txnguard.go): AppendTransactional appends a Produce's batch,
// verifying first, through a function the caller passes, a transactional
// batch that would open a transaction; AppendTxnMarker appends a
// transaction marker and ends the verifications it overtakes. The
// partition does not know the transaction coordinators (agent/txn) nor
// the wire protocol (agent/kafka): it returns the verify function's
// errors as they come and its own as kerr values.
//
// # Life cycle
//
// Open builds a partition on an opened log in the state the store holds
// (Config.Stored), not yet serving it; OpenTiering, if the topic is
// tiered, comes next, and the first ApplyState gives the machine its role.
// Close stops, in order: new appends, the fetcher and the ISR writers
// (waiting for them), appends in flight, tiering, and the log.
//
// # Concurrency
//
// Every method is safe for concurrent use. Machine calls are made under
// the partition's write lock and reads of it under the read lock, also
// by the fetch loops; store writes (ISR changes) and network calls (the
// fetcher's and the fetch loops') run outside it, through Cluster, which
// the controller implements. The high watermark is
// published in an atomic so that readers take no lock.
//
// Lock order: txnMu (the verification guards), then mu, then the log's
// own lock. A fetch loop takes Fetchers' mutex, then its own, and never
// holds either while it takes a partition's. A transactional append and a marker's append hold txnMu
// across Append; the verify call and the wait for acks run outside every
// lock.
package partition
