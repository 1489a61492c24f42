// Package control is one agent's part of the cluster control plane
// (docs/design.md §6 "Election", §8): partition states move only by CAS of
// their state.json in the store, and every agent runs
//
//   - the replication loop: it re-reads announced (and, every reconcile
//     interval, all) partition states and applies them, elects a leader
//     for each local partition whose leader is gone, completes the
//     reassignments this agent leads, and runs the leaders' ISR checks;
//   - the balancer: the holder of the "balancer" lease plans moves with
//     agent/placement (by the loads the agents report, load.go, or by
//     counts) and writes them as reassignments, cancels moves to agents
//     that left (moves.go), and hands leadership back to preferred
//     replicas, before any move;
//   - the load report: with --rebalance-by load, this agent's replicas'
//     load, written to the store when it changes (load.go);
//   - drains: hand leaderships over and wait while the balancer moves the
//     replicas away.
//
// It is also the partitions' store side (partition.Cluster): their ISR
// writers CAS through it, and it re-reads and announces their states.
//
// The controller sees the agent's topic table through Host, which the
// agent root implements, and gossip through Members. Decisions that need
// no I/O are pure functions (electionResult, preferredLeaderState,
// placement.Place); the rounds that use time take it as an argument
// (BalanceOnce(ctx, now)), so tests drive them on logical time.
//
// # Concurrency
//
// Run owns the replication loop, the balancer loop and the load report
// loop, and waits for all of them when its context ends. The partition.Cluster methods, Drain and the
// Kafka-facing methods (Reassign, ElectPreferredLeader,
// PartitionReassignments) may be called concurrently from any goroutine.
package control
