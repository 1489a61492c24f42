// Package replica is the pure state machine of one partition replica on
// one agent: who is in sync, where the high watermark (HW) is, when an
// acks=all append is committed, which requests carry a stale leader epoch,
// and what a follower does to line its log up with a new leader. It
// follows Apache Kafka's Partition, Replica and AbstractFetcherThread
// (docs/design.md §6); the doc comment of each method names the rule it takes
// and says where it differs.
//
// It has no goroutines, timers, files, network or store. Time comes in as
// arguments, the leader's log position as a LogEnd, the replica's own log
// through the read-only EpochLog; decisions come out as plain values and
// as errors wrapping this package's sentinels, which agent/kafka turns
// into Kafka error codes. So every behaviour is a scripted scenario
// (testdata/*.txt).
//
// # Concurrency
//
// A Machine is not safe for concurrent use. Its owner (the agent's
// partition) calls it under the partition's lock, and does the I/O each
// decision asks for outside the lock: log truncation, CAS writes of
// state.json, waking waiters.
//
// # The loop around it
//
//	              state.json (read, or re-read after a lost CAS)
//	                      │
//	      BecomeLeader ◀──┴──▶ BecomeFollower
//	           │                     │
//	leader     ▼                     ▼      follower
//	FollowerFetched ─┐         FollowerAction ──▶ fetcher does it:
//	LeaderEndMoved  ─┼▶ LeaderUpdate            query-epoch → EpochAnswered
//	CheckISR        ─┘  {HW, Advanced, Change}  truncate    → Applied
//	                        │        │          restart-at  → Applied
//	AppendStatus ◀── Advanced        │          fetch       → Fetched /
//	(acks=all waiters)               ▼                        FetchOutOfRange
//	                   CAS state.json From → To
//	                   ConfirmISRChange / AbortISRChange
//	                   / BecomeLeader|BecomeFollower(stored)
//
// # What the agent relies on
//
// Leader. Every produce asks CheckAppend first, and appends with
// LeaderEpoch (read under the same lock). Every follower Fetch passes
// CheckFollowerFetch before the read and FollowerFetched after a read
// without error; every append and fsync calls LeaderEndMoved; a timer
// calls CheckISR every half replica.lag.time.max.ms. The HW in each
// LeaderUpdate is the one to serve; it never moves back while leading and
// never passes LogEnd.Durable. When Advanced, acks=all waiters ask
// AppendStatus again; they also do so after every state change, since a
// lost leadership fails them.
//
// ISR changes are proposals (ISRChange): the caller writes ISRChange.To
// with a CAS conditioned on ISRChange.From and reports the outcome. No
// second proposal is made while one is in flight, and the HW counts the
// maximal ISR meanwhile, so a lost write never lets the HW pass a replica
// that the stored ISR still holds.
//
// Becoming leader. The follower fetcher is stopped (no append in flight)
// before BecomeLeader, so that LogEnd.LEO is where the new epoch begins.
//
// Follower. After BecomeFollower the fetcher carries out FollowerAction,
// one at a time, and reports each result with the action it carried out.
// Its fetches long-poll for well under replica.lag.time.max.ms: a leader
// that has not heard from a follower for that long removes it from the
// ISR even on an idle partition.
// It truncates or restarts the log only while its action is still the
// current one, checked under a lock that state changes take too (Kafka's
// partitionMapLock has this part); otherwise a fetcher racing a
// leadership change could cut the log for a superseded epoch. Results of
// superseded actions are refused (ErrStaleAction) and change nothing.
//
// Both. Requests that carry a current leader epoch pass CheckEpoch (or
// OffsetForLeaderEpoch, which checks it); ErrUnknownLeaderEpoch means this
// agent is behind and should re-read state.json.
package replica
