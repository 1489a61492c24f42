// Package producers holds the idempotence and transaction state of one
// partition, with the rules of Kafka's ProducerStateManager. It is the one
// copy of those rules: agent/log applies them to a partition log, and the
// diskless batch coordinator (agent/batchcoord, docs/design.md §7a) to a
// partition that has no log. Pure: no I/O, no clock, no goroutines.
//
// # Rules
//
// Per producer id a State keeps the epoch, the last BatchesKept
// idempotent batches (sequences and offsets), the largest batch
// timestamp, the first offset of an open transaction and the coordinator
// epoch of the last marker.
//
//   - A batch of an older epoch is fenced (ErrInvalidProducerEpoch); a
//     newer epoch must start at sequence 0 (ErrOutOfOrderSequence).
//   - A batch repeating one of the kept batches is a duplicate: Check
//     returns the kept batch, whose offsets the retry is answered with.
//     Otherwise its first sequence must follow the newest kept one,
//     wrapping at MaxInt32 (ErrOutOfOrderSequence). A producer with no
//     state (new, expired, or removed by retention) may start anywhere.
//   - A producer with an open transaction may only send transactional
//     batches (ErrInvalidTxnState). Its first transactional batch opens
//     the transaction; a commit or abort marker closes it. A marker of an
//     older producer epoch is fenced, and one from an older coordinator
//     epoch than the producer's last marker is refused
//     (ErrCoordinatorFenced).
//   - The first unstable offset is the first offset of the oldest open
//     transaction: the last stable offset is never above it.
//   - A producer whose newest batch is older than the expiry time is
//     forgotten, unless its transaction is open.
//
// # Use
//
// The owner calls Check before it writes a batch, then, once the batch
// has its offsets, Update with the header carrying its real base offset;
// on recovery or replay it calls Update alone for every batch in offset
// order. Batches without a producer id pass through both untouched.
//
// A State is not safe for concurrent use: its owner's lock guards it
// (agent/log's Log.mu, the batch coordinator's partition lock), including
// reads through Len, Producer, Each and TxnOpen.
//
// # Snapshot
//
// Encode writes the state as of an offset (the state holds every batch
// below it) and Decode reads it back. The payload carries no magic,
// version or checksum: the caller frames it (agent/log's checkpoint
// framing adds a magic per layout, a version and a CRC-32C) and tells
// Decode which layout it holds. Integers are big-endian; producers come
// in ascending id order, each id once, so that a state has one encoding.
//
//	offset  size  field
//	     0     8  offset: every batch below it is in the state
//	     8     4  count of producers
//	    12        count x producer:
//	                 8  producer id (>= 0)
//	                 2  epoch
//	                 8  last timestamp (largest MaxTimestamp of its batches)
//	                 8  first offset of its open transaction, -1 if none  ┐ absent in the
//	                 4  coordinator epoch of its last marker, -1 if none  ┘ layout before
//	                 1  n, batches kept (at most BatchesKept)               transactions
//	              24*n  n x batch, oldest first:
//	                      4 first sequence · 4 last sequence ·
//	                      8 first offset · 8 last offset
//
// The layout from before transactions (agent/log's magicProducerV1, read
// with Decode(p, false)) lacks the two transaction fields; it is only read,
// never written.
package producers
