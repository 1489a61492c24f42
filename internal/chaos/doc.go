// Package chaos proves docs/design.md §11 under faults (issue 8): it starts
// agents as processes (internal/testagent) on a shared store, runs a
// workload that records everything the cluster acknowledged, injects
// faults on a seeded schedule, heals, and checks that nothing
// acknowledged was lost.
//
//	        seed ──▶ Planner ──▶ faults: SIGKILL+restart, SIGSTOP/SIGCONT,
//	                               stall followers then SIGKILL the leader,
//	                               store errors/resets/latency/500s/half PUTs,
//	                               wiped disks, full disks, network cuts
//	                               (agent-agent, agent-store), SIGKILL and
//	                               an emptied data directory (wipe)
//	                                 │
//	workload ──Kafka──▶ agent 0..N-1 ◀┘ ──S3──▶ StoreProxy ──▶ MinIO
//	(recorder)                                    (or a file:// store)
//	    │
//	    └──▶ History ──▶ Check (pure) ──▶ Report ──▶ Result (result.json, summary)
//
// Run is the whole of a run and must be called from a test's goroutine
// (it restarts agents with testagent, which fails the test when an agent
// does not come back). Everything a run waits for is bounded: the fault
// phase by Config.Duration and MaxFaults, healing by Config.HealTimeout,
// each request by requestTimeout, reading back by readbackTimeout.
//
// The workload: Config.Producers idempotent acks=all producers cycle over
// the partitions of Config.Topics topics (RF 3, min.insync.replicas 2),
// recording every acknowledged (topic, partition, offset, value); one
// acks=1 producer does the same on a topic of its own, recorded apart
// (its promise is weaker and its losses are reported, not failed); a
// consumer group of Config.Consumers members reads the acks=all topics,
// committing after each poll and recording what each member received in
// each generation and which commits the coordinator acknowledged; a
// sampler reads the group's committed offsets with OffsetFetch.
//
// After healing, Check requires that every acknowledged acks=all record
// is read back exactly once at the offset it was acknowledged with, that
// offsets are contiguous from 0, that acknowledged commits never go down
// and OffsetFetch never returns less than one, that the group received
// only records of the final log and, once caught up, every acknowledged
// one. Run also requires that every partition (the internal offsets topic
// included) has one live leader and a full ISR on every agent within
// HealTimeout, that producers are acknowledged again after healing, and
// that `strata verify` finds every object the manifests name.
//
// The result also reports, without judging them, each acks=all
// producer's longest produce gap (ProduceGaps: the longest wait between
// two acknowledgements during the fault phase, overall and for one
// partition, and the fault that began last before it ended), and the
// producers' own franz-go logs are kept beside the agents' (client-*.log)
// to explain it. The producers never block: while a client holds
// maxBufferedRecs records not yet answered, new records are skipped and
// counted, so that a cluster that stops acknowledging ends the run with a
// report rather than hanging it.
//
// With Config.Diskless the acks=all topics are diskless (docs/design.md
// §7a): every agent takes every partition's produces, Metadata names an
// agent by its rack pick, and the batch coordinators, leaders of the partitions of
// __diskless_state, give the offsets. There is no acks=1 topic (on a
// diskless topic acks=1 means acks=all). Faults aimed at "the leader of
// partition k" hit the leader of __diskless_state-k, a batch coordinator.
// Check is the same; healing requires that every agent name the same
// live leader of every diskless partition, and that __diskless_state, a
// classic topic, heal as __consumer_offsets does. An epoch sampler asks
// every agent for the diskless partitions' leader epochs every 200 ms and
// reports the answers below an epoch answered before (EpochRewinds),
// which a client that moved between agents would refuse. `strata verify`
// reads only the manifests under topics/, and a diskless run has none (a
// diskless topic has no tiered part until object compaction is built, and
// __diskless_state is compacted, so not tiered): it never reads the
// commit objects under diskless/objects/, and its "0 problems" says
// nothing about them.
//
// With Config.Network each agent runs in a network namespace of its own on
// a bridge (internal/netns), so that netcut and storecut faults cut real
// connections: an agent from all the other agents or from one of them (a
// partial partition), or from the store, while the harness's clients still
// reach every agent.
//
// The plan of faults repeats exactly from the seed (SeedEnv overrides
// it); which agent "the leader of partition k" is, and which store
// request a store fault hits, depend on the run.
package chaos
