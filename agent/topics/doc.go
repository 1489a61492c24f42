// Package topics is the agent's topic table: every topic the agent serves,
// with its stored metadata, this agent's replicas of its partitions
// (agent/partition), the partitions only other agents hold (peers), and
// the immutable snapshot the Kafka handlers read (dataplane.Topic). It
// serves the handlers' TopicReader and TopicAdmin families, creates the
// coordinators' internal topics on first use, and keeps the table in line
// with the store.
//
// The store (agent/metadata) is the truth; the table is this agent's view
// of it. Every change writes the store first and then changes local state
// (opens or closes partitions, removes directories, applies configs), so
// a crash in between leaves what the next start or reconcile repairs.
// Other agents' changes arrive by Reconcile (docs/design.md §8: gossip is
// a hint, the store is the truth): an agent that changes a topic announces
// it by gossip, and every agent then re-reads the topics from the store,
// as it does anyway every --reconcile-interval, which repairs any
// broadcast gossip lost. A topic new to this agent gets its local replicas
// opened and its other partitions shown as peers; a topic gone from the
// store (or re-created under another id) is closed and its local data
// removed; a topic whose configs changed gets them on its partitions'
// logs.
//
// The table sees the agent through Host: opening a topic's local
// partitions (their logs, replication and tiering are the agent's), the
// start of tiering, the removal of a partition's directory, the live
// agents for placement, and the gossip announcement.
//
// A diskless topic (diskless.enable=true, docs/design.md §7a) has no
// replicas to place, no partition states in the store and no local logs:
// its partitions come from the diskless data path (DisklessPartitions)
// instead of the Host. Until the agent has one, the table refuses to
// create diskless topics: the gate in diskless.go.
//
// # Entries
//
// An Entry is immutable once in the table. A change builds a new entry
// and swaps it in; a handler holding the old snapshot keeps a consistent
// view, and partitions are shared between the two. Callers must not
// change an Entry or its slices.
//
// # Concurrency
//
// Every exported method is safe for concurrent use. Two locks:
//
//   - adminMu serialises topic changes (create, delete, add partitions,
//     alter configs, reconcile, replica moves, internal topics' creation
//     and compaction), so each sees the outcome of the one before. It is
//     held across store writes and Host calls.
//   - mu guards the maps by name and by id; lookups take it only to read
//     them, never across I/O.
//
// Lock order: adminMu, then mu, then a partition's lock. Host methods are
// called with adminMu held and mu not held, so they may look topics up
// but must not call the table's changing methods.
package topics
