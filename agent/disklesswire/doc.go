// Package disklesswire holds the Kafka-framed requests agents send to a
// diskless partition's batch coordinator (docs/design.md §7a), with
// Strata-private API keys that no Kafka client sends and ApiVersions
// does not advertise. They travel on the inter-agent listener only, with
// its TLS and SASL, and are served to principals with CLUSTER_ACTION.
// Each type implements kmsg.Request or kmsg.Response, so the agent's
// peer connections (internal/kafkawire) carry them as any other request;
// agent/kafka serves them and agent/peer sends them.
//
// Version 0 of each, in Kafka's non-flexible encoding (big-endian
// integers, int32 array lengths, int16-length nullable strings; an id is
// 16 raw bytes):
//
//	DisklessCommit request (key 32000): object id · cut ms i64 ·
//	  writer i32 · [batch: topic id · partition i32 · position i64 ·
//	  size i32 · last offset delta i32 · max timestamp i64 ·
//	  producer id i64 · producer epoch i16 · base sequence i32 ·
//	  attributes i16 · inline nullable bytes (a marker's control
//	  batch, with a zero object id)]
//	DisklessCommit response: error code i16 · error message ·
//	  [result: error code i16 · error message · base offset i64 ·
//	  log start i64 · duplicate bool]          one per batch, in order
//
//	DisklessIndex request (key 32001): max wait ms i32 ·
//	  [partition: topic id · partition i32 · op i8 · value i64 ·
//	  max bytes i32 · upper i64]
//	  op 0 reads batches from offset value, op 1 finds the first batch
//	  whose max timestamp is at least value, op 2 answers
//	  OffsetForLeaderEpoch for epoch value, op 3 lists the aborted
//	  transactions overlapping [value, upper), op 4 finds the batch with
//	  the largest max timestamp.
//	DisklessIndex response: [partition: error code i16 · log start i64 ·
//	  compacted end i64 · high watermark i64 · last stable i64 ·
//	  coordinator epoch i32 · epoch i32 · end offset i64 ·
//	  [batch: base offset i64 · last offset i64 · object id ·
//	  position i64 · size i32 · max timestamp i64 · epoch i32 ·
//	  inline nullable bytes] · [aborted: producer id i64 ·
//	  first offset i64 · last offset i64]]     one per partition, in order
//
//	DisklessGuard request (key 32002): topic id · partition i32 ·
//	  producer id i64 · producer epoch i16
//	DisklessGuard response: error code i16
//
//	DisklessObjects request (key 32003): [object id]
//	DisklessObjects response: error code i16 · [referenced bool]  one per id
//
//	DisklessTrim request (key 32004): topic id · partition i32 · offset i64
//	DisklessTrim response: error code i16 · log start i64
//
// Decoding bounds every array by the bytes left before allocating, so a
// hostile frame cannot make it allocate more than the frame's size.
package disklesswire
