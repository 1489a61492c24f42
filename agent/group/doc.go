// Package group is the consumer-group coordinator (docs/design.md §9): the
// classic group protocol (classic.go, members.go), KIP-848 groups with
// server-side assignment (consumer.go, reconcile.go, assign.go) and
// committed offsets
// kept as records in a partition of the internal topic __consumer_offsets,
// rebuilt from that partition when a coordinator starts. Membership is
// stored there too, so it survives a restart or failover: a classic
// group's GroupMetadata record after each rebalance and when it empties,
// a KIP-848 group's ConsumerGroup records (consumer_records.go) as deltas
// after each change. As in Kafka, a group
// whose last member leaves stays, Empty, until ExpireOffsets (the offsets
// cleanup) has removed its offsets; then it is dropped (Dead).
//
// # Records
//
// Records use Apache Kafka's own schemas for __consumer_offsets, so Kafka's
// tools could read the partition:
//
//	key   OffsetCommitKey   v1: group, topic, partition
//	value OffsetCommitValue v3: offset, leader epoch, metadata, commit time (ms)
//	      (a null value is a tombstone: the offset was deleted)
//
//	key   GroupMetadataKey   v2: group
//	value GroupMetadataValue v3: protocol type, generation, protocol,
//	      leader, state time (ms), and per member its id, instance id,
//	      client id and host, timeouts, subscription and assignment
//	      (a null value is a tombstone: the group was deleted)
//
// KIP-848 groups use key types 3 and 5 to 8 (consumer_records.go); other
// key versions are skipped on replay.
//
// # Concurrency
//
// A Coordinator serves one partition of __consumer_offsets. All of its
// methods are safe for concurrent use; one mutex orders every change, and a
// change is applied to memory only after its records are durable in the
// log, so what a client was told survives a restart. Methods never hold
// the mutex while waiting for anything but that one append.
package group
