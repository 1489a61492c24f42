// Package diskless is a diskless partition as the agent's handlers see
// it (docs/design.md §7a), on every agent (Partition, Service):
//
//   - the write buffer (Writer), which turns the Produce batches of every
//     diskless partition an agent receives into commit objects in the
//     bucket (tiering/sharedobj's format) and has them committed through
//     a Committer, the Service, which routes them to the agents of the
//     partitions' batch coordinators (route.go);
//   - reads: the coordinator's index (read.go), the objects through a
//     cache the writer primes, the tiered segments below the compacted
//     end (remote.go), and an index follower per coordinator agent
//     (follow.go) that wakes Fetch long polls;
//   - transactions (txn.go): KIP-890 guards, markers committed inline;
//   - object compaction of the partitions whose coordinators run here
//     (compact.go, stage.go), and the orphan janitor's pass (janitor.go);
//   - Metadata's rack pick (pick.go).
//
// The path of a batch:
//
//	Add ──copy──▶ buffer ──cut──▶ queue of objects, in cut order
//	 ▲ waits while           │          │
//	 │ BufferMaxBytes        │          ├─▶ upload goroutines (UploadsInFlight): Encode,
//	 │ are held              │          │   one create-once PUT, retried until the deadline
//	 │                       │          │   (they may finish in any order)
//	 │                       │          ▼
//	 │                       │   commit goroutine: the head of the queue only, once
//	 │                       │   uploaded; Committer.Commit, retried until the deadline
//	 │                       │          │
//	 └── bytes freed ◀───────┴── waiters answered, object leaves the queue
//
// The buffer is cut when its oldest batch is CommitInterval old (a
// timer) or it holds CommitBytes (in Add); a batch that would take it past
// CommitBytes is cut into the next object, so only a single batch larger
// than CommitBytes makes a larger object. An object's deadline is its cut
// plus CommitTimeout: the same bound the coordinators apply, so no commit
// lands after the orphan janitor may delete the object.
//
// Commits go one object at a time in cut order, whichever upload ends
// first, so that a producer's batches reach its coordinator in the order
// it sent them: Add takes one partition's batches in call order (Adds
// that wait for room are admitted first come, first served), an object
// keeps them in that order, and objects are committed in order.
//
// What each failure leaves:
//
//   - A PUT fails: retried with backoff (jittered, 50 ms doubling to 2 s)
//     until the deadline, then the batches get ErrUpload wrapping the
//     store's error. The object may have been stored unanswered: no one
//     references it and the janitor deletes it.
//   - A PUT finds the key taken: the id is a fresh UUIDv7, so this is an
//     earlier attempt of the same PUT whose answer was lost; the object is
//     read back, and taken as stored if it holds our bytes. Other bytes
//     fail the upload at once (see put).
//   - The committer errs: the same object (same id, same batches) is
//     committed again, which the coordinators answer from what they
//     stored, until the deadline; then ErrCommitTimeout. Some of its
//     commits may have landed: idempotent retries of those batches are
//     answered as duplicates.
//   - The producer's request ends first: its wait returns ctx.Err(); a
//     batch not yet sent to the committer is left out of the commit.
//   - Close: every batch not answered gets ErrClosed, committed or not.
//     Drain first: it cuts at once and waits for every commit.
//
// Concurrency: every method is safe for concurrent use. One mutex,
// Writer.mu, guards the buffer, the queue, the waiting Adds and each
// batch's state; it is never held across a call to the bucket, the
// committer or OnUploaded. Goroutines: one cut timer loop, UploadsInFlight
// upload loops and one commit loop, all started by NewWriter and waited
// for by Close.
//
// Files: committer.go (the errors that answer a batch, the Committer
// seam), config.go, buffer.go (the pure core: cuts, an object's layout,
// retry waits), writer.go (Add, room, cuts), upload.go, commit.go,
// lifecycle.go (Drain, Close), metrics.go.
//
// Metrics:
//
//	strata_diskless_buffered_bytes           bytes taken and not answered (what BufferMaxBytes bounds)
//	strata_diskless_objects_uploaded_total   objects stored
//	strata_diskless_object_bytes_total       their bytes
//	strata_diskless_upload_seconds           first PUT to stored, per object
//	strata_diskless_commit_seconds           cut to answered, per object
//	strata_diskless_commits_total{outcome}   batches answered: committed, duplicate, refused,
//	                                         timed_out, failed, dropped
package diskless
