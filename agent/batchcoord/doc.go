// Package batchcoord will be the diskless batch coordinator
// (docs/design.md §7a): the one authority of each diskless partition,
// which assigns offsets at commit and records where each batch lives, as
// a state machine over a partition of the internal topic
// __diskless_state. Built so far: the records it appends to that topic
// (records.go) and a partition's offset index with its epoch lookups
// (index.go). Nothing runs them yet.
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
//	  producer snapshot at the compacted end (the log's encoding)
//
// A nil value is a tombstone.
package batchcoord
