// Package partition is one local replica of a partition (docs/design.md §6):
// its log, the state.json it last applied, the replica state machine
// (agent/replica) that decides from both what it serves, the follower's
// fetcher, the ISR writer, and its tiering state. It implements
// dataplane.Partition and tiering.Source. Peer is a partition of which the
// agent holds no replica.
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
// the partition's write lock and reads of it under the read lock; store
// writes (ISR changes) and network calls (the fetcher's) run outside it,
// through Cluster, which the controller implements. The high watermark is
// published in an atomic so that readers take no lock.
package partition
