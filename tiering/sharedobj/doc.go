// Package sharedobj is the format of a diskless commit object
// (docs/design.md §7a): the batches of many diskless partitions that one
// agent received during a commit interval, uploaded as one object and
// committed to each partition's batch coordinator.
//
//	key: diskless/objects/<object id>.obj   the id a UUIDv7 in 32 hex digits,
//	                                        so that keys sort in cut order
//	offset    size   field
//	0         4      magic "SDLO"
//	4         2      format version (1)
//	6         2      flags (0; readers refuse unknown bits)
//	8         16     object id (the key's)
//	24        4      writer's agent id
//	28        8      cut time, unix ms (the writer's clock)
//	36        4      run count n
//	40        4      CRC-32C of the data section [H, end)
//	44        36·n   runs, sorted by (topic id, partition), one per partition:
//	                   topic id (16) · partition (4) · position (8) ·
//	                   length (4) · batch count (4)
//	44+36n    4      CRC-32C of bytes [0, 44+36n)
//	H=48+36n  ...    data: each run's batches, contiguous, in arrival order
//
// Integers are big-endian. A run's position is relative to the data
// section's start, and the runs tile the data section in their order, so a
// partition's share is one ranged read. The batches are RecordBatch v2 as
// the receiving agent checked them; their base offset and partition leader
// epoch, outside the batch CRC, are left for readers to stamp, since only
// the commit decides them.
//
// Nothing here touches the store: Encode builds an object, DecodeHeader
// and CheckData check one that was read, Batches walks a run's batches.
// Every function is safe for concurrent use.
package sharedobj
