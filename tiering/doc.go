// Package tiering moves sealed segments of partition logs to the object
// store and reads them back (docs/design.md §7).
//
//   - tierer.go: the Tierer, one per agent: the upload loop over the
//     partitions it is given, bounded by Config.Concurrency and UploadRate,
//     and the shared chunk cache.
//   - manifest.go: each partition's manifest, a CAS head plus immutable
//     pages, fenced by the leader epoch stored in the head.
//   - upload.go: sealed segments wholly below the high watermark, in offset
//     order, each under an object name no other upload can take.
//   - remote.go: reads below the local log, by ranged GETs of fixed-size
//     chunks through the cache, with read-ahead across segments.
//   - retention.go: remote retention, DeleteRecords and the orphan janitor,
//     which also deletes what a compaction retired.
//   - compact.go, compactswap.go: the leader's compaction of a compacted
//     topic's uploaded segments, swapped into the manifest by one CAS.
//   - verify.go, cost.go: `strata verify` and the console's cost estimate.
//
// It knows partition logs only through the Log interface (log.go), which
// the agent implements over agent/log, and the bucket through
// tiering/objstore; it imports no agent package.
package tiering
