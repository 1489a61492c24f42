// Package batchcoord is the diskless batch coordinator (docs/design.md
// §7a): the one authority of each diskless partition, which assigns
// offsets at commit and records where each batch lives, as a state
// machine over a partition of the internal topic __diskless_state
// (coordlog.Log). agent/coord loads one per partition of that topic led
// here, at the partition's leader epoch, which is the coordinator's
// epoch.
//
// A Commit decides an uploaded object's batches in order with Kafka's
// producer rules (agent/log/producers): a duplicate of one of the
// producer's last five batches gets its first offsets, a refusal its
// error, and every other batch the next offsets of its partition. The
// decisions are appended as one record batch of Run records, acks=all,
// and only then applied to the index and answered. Commits are
// serialized; reads (Read, OffsetForEpoch, FindByTimestamp) take the
// state's mutex only. The producer state moves while a commit is
// decided, before its append: an append that fails closes the
// coordinator, and agent/coord loads a new one from the log, so memory
// is never ahead of what is durable for longer than one failed commit.
// A repeated commit of an object (a writer that lost the answer) is
// answered from the offsets its Runs gave, kept for the commit timeout
// and rebuilt from the log on load.
//
// Transactions: a marker is committed inline (CommitBatch.Inline, with a
// zero object id); it closes its producer's transaction, records an
// abort's range (AbortedIn) and removes the producer's KIP-890 guard
// (Guard), without which a batch that would open a transaction is
// refused (ErrNoGuard). The last stable offset is the first offset of
// the oldest open transaction.
//
// Retention and DeleteRecords (retain.go) raise a partition's log start
// and drop the Runs below it with one Partition record; a load (load.go)
// gathers the newest Partition record and the surviving Runs before
// building.
//
// Object compaction (agent/diskless) asks for a CompactionPlan and, once
// the segment is in the manifest, moves the index's start with
// Compacted, the same way.
//
// Not built yet: producer expiry.
//
// Records are Kafka-style coordinator records: the key starts with its
// type and the value with its version, both int16, big-endian, so that a
// reader skips what it does not know and the log cleaner keeps the newest
// value per key.
//
//	key type 0, Run: topic id (16) · partition (4) · base offset (8)
//	  value v0: object id (16; zero for an inline batch) · coordinator
//	  epoch (4) · commit time ms (8) · batch count (4) · per batch:
//	  offset delta (4) · last offset delta (4) · position (8) · size (4) ·
//	  max timestamp (8) · producer id (8) · producer epoch (2) · base
//	  sequence (4) · attributes (2) · inline length (4; -1: none) · inline
//	  bytes (a transaction marker's control batch)
//	key type 1, Partition: topic id (16) · partition (4)
//	  value v0: log start (8) · compacted end (8) · epoch count (4) ·
//	  per epoch: epoch (4) · start offset (8) · snapshot length (4) ·
//	  producer snapshot at the compacted end (producers.State.Encode)
//
// A nil value is a tombstone.
package batchcoord
