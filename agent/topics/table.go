package topics

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// Host is the agent as the topic table sees it: the local side of a topic
// (partition logs, replication, tiering, directories), the live agents and
// gossip. The agent root implements it. Every method is called with the
// table's adminMu held (package comment, "Concurrency"), so none may call
// the table's changing methods; RemoveDir may be called from several
// goroutines at once.
type Host interface {
	// OpenPartitions opens this agent's replicas of t from index first on
	// and applies their stored states; the partitions it holds no replica
	// of come back as peers, both in index order. restart is set when the
	// agent starts (Load), where a replica it led is taken over in a new
	// epoch. On an error it closes what it opened. The table owns the
	// returned partitions from then on.
	OpenPartitions(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32, restart bool) ([]*partition.Partition, []*partition.Peer, error)
	// OpenTiering starts tiering p, whose topic turned remote storage on.
	OpenTiering(ctx context.Context, p *partition.Partition) error
	// RemoveDir removes the local directory name (partition.DirName) of a
	// closed partition; why is logged.
	RemoveDir(name, why string)
	// PlacementAgents are the live agents in placement order.
	PlacementAgents() []int32
	// Announce tells the other agents, by gossip, that topics changed.
	Announce() error
}

// Config is the table's share of the agent's settings.
type Config struct {
	// Defaults are the agent-level defaults of topic configs
	// (agent.Config.TopicDefaults).
	Defaults metadata.Defaults
	// NumPartitions (--num-partitions) is the partition count of topics
	// created without one.
	NumPartitions int32
	// DefaultReplicationFactor (--default-replication-factor) is the
	// replication factor of topics created without one; 0 means 3 when at
	// least three agents are alive, else as many as are alive.
	DefaultReplicationFactor int16
	// AutoCreate (--auto-create-topics) is auto.create.topics.enable, which
	// the Metadata handler reads.
	AutoCreate bool
	// Flush and FlushInterval (--log-flush, --log-flush-interval) go into
	// every partition log's config (LogConfig).
	Flush         log.FlushPolicy
	FlushInterval time.Duration
	// Diskless serves the partitions of diskless topics (diskless.go);
	// the agent's data path, agent/diskless.
	Diskless DisklessPartitions
}

// Entry is a topic this agent serves: its stored metadata, its local
// partitions, and the immutable snapshot handed to the Kafka handlers. It
// is never changed once in the table (package comment, "Entries").
type Entry struct {
	Meta  metadata.Topic
	Parts []*partition.Partition // this agent's replicas
	Peers []*partition.Peer      // partitions only other agents hold
	// Diskless are a diskless topic's partitions (Config.Diskless), in
	// index order; a diskless topic has no Parts or Peers, a classic one
	// no Diskless.
	Diskless []dataplane.Partition
	Snap     *dataplane.Topic // also holds the resolved configs
}

// newEntry is the entry of a classic topic.
func newEntry(meta metadata.Topic, resolved metadata.Resolved, parts []*partition.Partition, peers []*partition.Peer) *Entry {
	// In partition order, this agent's replicas and the others' alike, so
	// handlers index the list by partition number.
	all := make([]dataplane.Partition, 0, len(parts)+len(peers))
	for _, p := range parts {
		all = append(all, p)
	}
	for _, p := range peers {
		all = append(all, p)
	}
	slices.SortFunc(all, func(x, y dataplane.Partition) int { return int(x.Index() - y.Index()) })
	return &Entry{Meta: meta, Parts: parts, Peers: peers, Snap: snapshot(meta, resolved, all)}
}

// newDisklessEntry is the entry of a diskless topic.
func newDisklessEntry(meta metadata.Topic, resolved metadata.Resolved, diskless []dataplane.Partition) *Entry {
	return &Entry{Meta: meta, Diskless: diskless, Snap: snapshot(meta, resolved, diskless)}
}

// changed is e with new metadata and configs and the same partitions.
func (e *Entry) changed(meta metadata.Topic, resolved metadata.Resolved) *Entry {
	if meta.Diskless() {
		return newDisklessEntry(meta, resolved, e.Diskless)
	}
	return newEntry(meta, resolved, e.Parts, e.Peers)
}

// snapshot is the handlers' view of a topic whose partitions, in index
// order, are all.
func snapshot(meta metadata.Topic, resolved metadata.Resolved, all []dataplane.Partition) *dataplane.Topic {
	rf := int16(0)
	if len(all) > 0 {
		rf = int16(len(all[0].Replicas()))
	}
	return &dataplane.Topic{
		Name:              meta.Name,
		ID:                meta.ID,
		Internal:          Internal(meta.Name),
		Configs:           maps.Clone(meta.Configs),
		Resolved:          resolved,
		PartitionCount:    meta.Partitions,
		ReplicationFactor: rf,
		Partitions:        all,
	}
}

// Table is the agent's topic table. See the package comment.
type Table struct {
	cfg    Config
	store  *metadata.Store
	host   Host
	signal *partition.Signal // wakes every long poll; the agent's
	logger *slog.Logger

	adminMu sync.Mutex // serialises topic changes; before mu
	mu      sync.RWMutex
	byName  map[string]*Entry
	byID    map[[16]byte]*Entry
}

// New is an empty table of the topics in store; Load fills it. signal is
// the agent's data signal: DataSignal waits on it, and a dropped topic
// notifies it so that long polls on the topic answer.
func New(cfg Config, store *metadata.Store, host Host, signal *partition.Signal, logger *slog.Logger) *Table {
	return &Table{cfg: cfg, store: store, host: host, signal: signal, logger: logger,
		byName: map[string]*Entry{}, byID: map[[16]byte]*Entry{}}
}

// Load opens every partition of every stored topic that this agent
// replicates (Host.OpenPartitions with restart set), and every partition
// of the diskless topics. A diskless topic is left unserved, with a
// warning, while the gate is shut (diskless.go). Removing the directories
// of topics gone from the store is the caller's: they are the agent's
// files.
func (t *Table) Load(ctx context.Context) error {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	stored, err := t.store.Topics(ctx)
	if err != nil {
		return fmt.Errorf("read topics from the store: %w", err)
	}
	for _, m := range stored {
		r, err := metadata.Resolve(m.Configs, t.cfg.Defaults)
		if err != nil {
			return fmt.Errorf("topic %s: stored configs: %w", m.Name, err)
		}
		e, err := t.openLocked(ctx, m, r, nil, true)
		if err != nil {
			return err
		}
		t.put(e)
	}
	return nil
}

// openLocked opens partitions [from.Meta.Partitions, m.Partitions) of the
// stored topic m (from nil: all of them) and returns its entry with from's
// partitions and the new ones: a classic topic's through the Host, a
// diskless topic's through the diskless data path. restart is the Host's. t.adminMu is held.
func (t *Table) openLocked(ctx context.Context, m metadata.Topic, r metadata.Resolved, from *Entry, restart bool) (*Entry, error) {
	first, have := int32(0), &Entry{}
	if from != nil {
		first, have = from.Meta.Partitions, from
	}
	if m.Diskless() {
		opened, err := t.cfg.Diskless.OpenDiskless(ctx, m, r, first)
		if err != nil {
			return nil, err
		}
		return newDisklessEntry(m, r, append(slices.Clone(have.Diskless), opened...)), nil
	}
	parts, peers, err := t.host.OpenPartitions(ctx, m, r, first, restart)
	if err != nil {
		return nil, err
	}
	return newEntry(m, r, append(slices.Clone(have.Parts), parts...), append(slices.Clone(have.Peers), peers...)), nil
}

// ClosePartitions closes every local partition, at most parallelism at a
// time, holding mu meanwhile. The agent calls it once, when it closes.
func (t *Table) ClosePartitions(parallelism int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []*partition.Partition
	for _, e := range t.byName {
		parts = append(parts, e.Parts...)
	}
	return partition.CloseAll(parts, parallelism)
}

func (t *Table) put(e *Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byName[e.Meta.Name] = e
	t.byID[e.Meta.ID] = e
}

// Entry is the served topic name.
func (t *Table) Entry(name string) (*Entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.byName[name]
	return e, ok
}

// EntryByID is the served topic of id.
func (t *Table) EntryByID(id [16]byte) (*Entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.byID[id]
	return e, ok
}

// entries returns the served topics, in no order.
func (t *Table) entries() []*Entry {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*Entry, 0, len(t.byName))
	for _, e := range t.byName {
		out = append(out, e)
	}
	return out
}

// Len is the number of served topics.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byName)
}

// Partitions returns every local partition, ordered by topic and index.
func (t *Table) Partitions() []*partition.Partition {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*partition.Partition
	for _, e := range t.byName {
		out = append(out, e.Parts...)
	}
	slices.SortFunc(out, func(x, y *partition.Partition) int {
		if c := strings.Compare(x.Topic(), y.Topic()); c != 0 {
			return c
		}
		return int(x.Index() - y.Index())
	})
	return out
}

// Lookup finds partition index of the topic of id: this agent's replica,
// or a peer; neither when the table has no such partition.
func (t *Table) Lookup(id [16]byte, index int32) (*partition.Partition, *partition.Peer) {
	e, ok := t.EntryByID(id)
	if !ok {
		return nil, nil
	}
	for _, p := range e.Parts {
		if p.Index() == index {
			return p, nil
		}
	}
	for _, p := range e.Peers {
		if p.Index() == index {
			return nil, p
		}
	}
	return nil, nil
}

// ChangeReplicas replaces the local replicas and peers of the topic of id
// (a replica moved here or away): fn gets the served entry and returns
// the new lists, or ok false to leave the entry as it is. fn runs with
// adminMu held, so no other topic change interleaves; it must not call
// the table's changing methods. Nothing happens if the topic is not
// served, or is diskless: it has no replicas.
func (t *Table) ChangeReplicas(id [16]byte, fn func(e *Entry) (parts []*partition.Partition, peers []*partition.Peer, ok bool)) {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	e, ok := t.EntryByID(id)
	if !ok || e.Meta.Diskless() {
		return
	}
	parts, peers, ok := fn(e)
	if !ok {
		return
	}
	t.put(newEntry(e.Meta, e.Snap.Resolved, parts, peers))
}

// Topics, Topic, TopicByID, AutoCreateTopics, DefaultPartitions,
// TopicConfigDefaults and DataSignal implement the Kafka handlers'
// TopicReader (agent/kafka).

// Topics are the served topics' snapshots, ordered by name.
func (t *Table) Topics() []*dataplane.Topic {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*dataplane.Topic, 0, len(t.byName))
	for _, e := range t.byName {
		out = append(out, e.Snap)
	}
	slices.SortFunc(out, func(x, y *dataplane.Topic) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Topic is the snapshot of the served topic name.
func (t *Table) Topic(name string) (*dataplane.Topic, bool) {
	e, ok := t.Entry(name)
	if !ok {
		return nil, false
	}
	return e.Snap, true
}

// TopicByID is the snapshot of the served topic of id.
func (t *Table) TopicByID(id [16]byte) (*dataplane.Topic, bool) {
	e, ok := t.EntryByID(id)
	if !ok {
		return nil, false
	}
	return e.Snap, true
}

func (t *Table) AutoCreateTopics() bool   { return t.cfg.AutoCreate }
func (t *Table) DefaultPartitions() int32 { return t.cfg.NumPartitions }

// TopicConfigDefaults returns the agent-level topic defaults; callers must
// not change the map.
func (t *Table) TopicConfigDefaults() metadata.Defaults { return t.cfg.Defaults }

// DataSignal returns a channel closed at the next high-watermark advance
// of any partition (the agent's signal).
func (t *Table) DataSignal() <-chan struct{} { return t.signal.Wait() }
