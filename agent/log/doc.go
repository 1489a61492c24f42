// Package log is one partition's durable log: RecordBatch v2 batches (see
// package batch) appended to segment files, with sparse offset and time
// indexes, a leader-epoch cache, idempotent-producer state (whose rules
// are package producers'), crash recovery, retention and compaction.
//
// # Files
//
// One directory per partition (docs/design.md §5):
//
//	00000000000000000000.log        batches exactly as Kafka stores them
//	00000000000000000000.index      relative offset u32 -> position u32   (index.go)
//	00000000000000000000.timeindex  max timestamp i64 -> relative offset u32
//	00000000000000000000.txnindex   aborted transactions (txn.go)
//	leader-epoch-checkpoint         epoch -> start offset                 (epoch.go)
//	log-start-offset-checkpoint     the start raised by DeleteRecords     (state.go)
//	producer-state/<offset>.snap    idempotence and open transactions     (producer.go)
//	clean-shutdown                  written by Close, removed by Open
//	decompression-checks            W and old batches' verdicts           (quarantine.go)
//	cleaner-offset-checkpoint       first offset not yet compacted        (clean.go)
//	<base>.log.cleaned              a cleaned group being written         (cleanswap.go)
//	<base>.<end>.swap               a cleaned group replacing [base, end)
//
// The state files share a versioned, CRC-32C framing (checkpoint.go) and
// are replaced atomically (write temp, fsync, rename, fsync directory).
//
// # Concurrency
//
// Every method is safe for concurrent use. One mutex guards the log's state;
// appends hold it while they write (page-cache speed), reads hold it only to
// choose file positions and do their I/O outside it, pinning the segment so
// that retention or Close cannot close the file under them. Fsyncs happen
// outside the mutex, serialised by flushMu: with log.flush=always one fsync
// covers every append made before it started (group commit), which Stats
// counts. Lock order: flusherMu, flushMu, mu, then FilePool.mu.
//
// # Open files
//
// Segment files are opened through a FilePool (files.go), which an agent
// shares between all its logs: a step that needs a file (a read, append,
// fsync, preallocation fill or recovery scan) pins it open for its
// length, and past the pool's bound the least recently used unpinned file
// is closed, to be reopened by the next step that needs it. An open that
// finds the process out of descriptors closes an idle file and retries,
// then fails with ErrNoDescriptors and leaves the log as it was.
//
// # Group commit across logs and preallocation
//
// A Syncer (syncer.go), shared by the logs of one data directory, makes the
// fsyncs that several logs ask for at once durable together: with one
// syncfs(2) of the filesystem from groupSyncMin logs up, else file by file;
// it keeps whichever way has been cheaper, and after a failed syncfs syncs
// file by file for good. Where the system has no syncfs it always syncs
// file by file (internal/vfs). With Options.Preallocate a goroutine per log
// keeps the active segment written with zeros ahead of its end so that an
// fsync after an append writes data, not the filesystem journal
// (prealloc.go); sealing and Close cut the file back to its data.
//
// # Writes and failures
//
// Append assigns offsets from the log end. A failed write is cut off again
// at once, so readers never see partial bytes. A failed fsync cuts the log
// back to the last fsynced offset (after a failed fsync Linux may have
// dropped the dirty pages while still serving them, so the bytes cannot be
// trusted), and every append waiting on it returns a StorageError. If even
// the cut fails, the log refuses writes (ErrFailed) and keeps serving reads.
// With log.flush=always, bytes become visible to Read when written, before
// their fsync; callers that must not expose them bound reads by
// FlushedOffset.
//
// # Recovery
//
// Open trusts sealed segments, which were fsynced with their indexes before
// the next segment got data: it checks that their index files parse, are
// monotonic, and that the batches after the last index entry end exactly at
// the end of the file, and rebuilds the indexes otherwise. Without the
// clean-shutdown mark, the active segment is scanned batch by batch with
// CRC checks. The first short or corrupt batch, or one whose base offset is
// not the previous batch's next offset, ends the log: the segment is cut
// there (logged with segment, offset and bytes cut) and later segments are
// deleted. The epoch cache drops entries past the end; producer state is
// the newest snapshot at or below the end plus a replay of the batches
// after it.
//
// # Retention
//
// ApplyRetention, DeleteRecordsBefore and TruncateTo change the log's range;
// all deletion of segments goes through deleteSegmentsLocked, which takes a
// predicate so that tiering can later require a segment to be uploaded.
//
// # Compaction
//
// Clean (clean.go, offsetmap.go, cleanswap.go) keeps the latest record of
// each key in the sealed segments of a cleanup.policy=compact log, as
// Kafka's LogCleaner, and swaps each cleaned group of segments in through
// a .cleaned and a .swap file that recovery deletes or completes. Offsets
// never move, so the log has gaps: a batch may start past the previous
// one's end, a segment past the previous segment's end; recovery,
// AppendReplicated and Read accept them (a read in a gap starts at the
// next batch). Lock order: cleanMu before mu. A swap holds mu only for
// its renames, removals and the segment list's change; its directory
// fsyncs and index writes run outside it, and retention, truncation and
// Close wait for a swap in flight (waitSwapLocked). BatchCleaner and
// SegmentBuilder (cleanremote.go) lend the same rules to the tiering
// package's remote compactor, for segments that live in the bucket.
package log
