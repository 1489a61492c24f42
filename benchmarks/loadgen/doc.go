// Package loadgen is Strata's load generator (issue 7): it starts the
// systems it compares, drives each with the same workload, and reports one
// Result per run.
//
// Targets (Target): a Strata agent subprocess (StartStrata), a cluster of
// them sharing one store (StartStrataCluster), the peers as processes of
// their own (StartPeer: franz-go's in-memory kfake, and NATS JetStream's
// file store with its defaults or with every write synced), kfake inside
// this process (StartKfake), one agent's PLAINTEXT and SASL_SSL listeners
// as two targets (StartStrataSecurity), two agents differing only in
// whether the log cleaner runs (StartStrataCompaction), one agent on
// MinIO whose two targets create classic and diskless topics
// (StartStrataDiskless), or any running Kafka (Bootstrap).
// Everything listens on loopback; a target stops only the PIDs it started,
// on Close. A target that asks for TLS or SASL carries its Security, and
// every franz-go client of a run connects with it.
//
// Run creates a fresh topic (for JetStream, one stream per partition),
// runs a Config against it — closed loop, or open loop where latency runs
// from each record's scheduled time so that queueing is not hidden — and
// deletes it. Kafka targets are driven by franz-go, JetStream by nats.go,
// with the same record values (record.go draws their layout), counts,
// pacing and in-flight window. Limits measures the machine (fdatasync'd
// disk bandwidth and latency, loopback TCP bandwidth) in the same Result
// form. Strata targets also report the object-store PUTs their agents
// counted during a run, and in catchup-store runs what the timed read took
// from the store. With Config.Connections, a run also holds that many
// idle client connections open to the target (connections.go); with
// Config.Compact the topic is compacted and a Strata run reports what the
// agents' log cleaners did during it (compaction.go); with
// Config.Diskless, or on the strata-diskless target, a Strata run reports
// what the agents wrote to the store during its timed phase (diskless.go).
//
// Run may be called from one goroutine at a time per target; it starts and
// waits for its own producer and consumer goroutines.
package loadgen
