package topics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// fakeHost is an agent that holds no replica: every partition is a peer
// in the state the store holds, so the table's store side runs without
// logs.
type fakeHost struct {
	store  *metadata.Store
	agents []int32

	mu        sync.Mutex
	announced int
	opened    []opened
}

// opened is one OpenPartitions call.
type opened struct {
	topic   string
	first   int32
	restart bool
}

var _ Host = (*fakeHost)(nil)

func (h *fakeHost) OpenPartitions(ctx context.Context, t metadata.Topic, _ metadata.Resolved, first int32, restart bool) ([]*partition.Partition, []*partition.Peer, error) {
	h.mu.Lock()
	h.opened = append(h.opened, opened{t.Name, first, restart})
	h.mu.Unlock()
	var peers []*partition.Peer
	for i := first; i < t.Partitions; i++ {
		st, _, err := h.store.PartitionState(ctx, t.ID, i)
		if err != nil {
			return nil, nil, err
		}
		peers = append(peers, partition.NewPeer(i, st))
	}
	return nil, peers, nil
}

func (h *fakeHost) OpenTiering(context.Context, *partition.Partition) error {
	return errors.New("fakeHost holds no partition")
}
func (h *fakeHost) RemoveDir(string, string) { panic("fakeHost holds no partition directory") }
func (h *fakeHost) PlacementAgents() []int32 { return h.agents }

func (h *fakeHost) Announce() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.announced++
	return nil
}

func (h *fakeHost) announcements() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.announced
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testConfig() Config {
	return Config{NumPartitions: 3, Flush: log.FlushAlways}
}

// newTable is a table of an agent among agents on store.
func newTable(store *metadata.Store, agents ...int32) (*Table, *fakeHost) {
	h := &fakeHost{store: store, agents: agents}
	return New(testConfig(), store, h, &partition.Signal{}, quiet), h
}

func newStore() *metadata.Store { return metadata.New(objstore.NewMem(), quiet) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func indexes(top *dataplane.Topic) []int32 {
	var out []int32
	for _, p := range top.Partitions {
		out = append(out, p.Index())
	}
	return out
}

// TestAdmin: the TopicAdmin operations write the store, serve the result,
// announce it, and refuse what Kafka refuses with the errors the
// handlers map to its codes.
func TestAdmin(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	table, host := newTable(store, 0, 1, 2)

	top, err := table.CreateTopic(ctx, "a.b", 2, 3, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if top.PartitionCount != 2 || top.ReplicationFactor != 3 || !slices.Equal(indexes(top), []int32{0, 1}) {
		t.Fatalf("created: %d partitions %v, rf %d; want 2 [0 1], 3", top.PartitionCount, indexes(top), top.ReplicationFactor)
	}
	if top.Configs[metadata.MinInsyncReplicas] != "2" {
		t.Errorf("rf 3 without min.insync.replicas: configs %v, want it set to 2", top.Configs)
	}
	if stored, err := store.Topic(ctx, "a.b"); err != nil || stored.ID != top.ID {
		t.Fatalf("stored: %v, %v; want id %x", stored, err, top.ID)
	}
	if got, ok := table.TopicByID(top.ID); !ok || got != top {
		t.Error("TopicByID does not find the created topic's snapshot")
	}
	if host.announcements() != 1 {
		t.Errorf("%d announcements after a create, want 1", host.announcements())
	}

	for _, c := range []struct {
		name       string
		partitions int32
		rf         int16
		want       error
	}{
		{"a.b", 1, 1, metadata.ErrTopicExists},
		{"a_b", 1, 1, metadata.ErrInvalidTopic},
		{ConsumerOffsets, 1, 1, metadata.ErrInvalidTopic},
		{"c", 1, 4, metadata.ErrInvalidReplicationFactor},
		{"c", 0, 1, metadata.ErrInvalidPartitions},
	} {
		if _, err := table.CreateTopic(ctx, c.name, c.partitions, c.rf, nil, false); !errors.Is(err, c.want) {
			t.Errorf("create %q (%d partitions, rf %d): %v, want %v", c.name, c.partitions, c.rf, err, c.want)
		}
	}

	if top, err := table.CreateTopic(ctx, "v", 5, 1, nil, true); err != nil || top.PartitionCount != 5 {
		t.Fatalf("validate only: %v, %v", top, err)
	}
	if _, ok := table.Topic("v"); ok {
		t.Error("a validate-only create is served")
	}
	if _, err := store.Topic(ctx, "v"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Errorf("a validate-only create is in the store: %v", err)
	}

	top, err = table.CreateTopic(ctx, "d", -1, -1, nil, false)
	if err != nil || top.PartitionCount != 3 || top.ReplicationFactor != 3 {
		t.Fatalf("create with the defaults: %v, %v; want 3 partitions (NumPartitions), rf 3 (three live agents)", top, err)
	}

	if err := table.CreatePartitions(ctx, "a.b", 2, false); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Errorf("create partitions to the current count: %v, want ErrInvalidPartitions", err)
	}
	if err := table.CreatePartitions(ctx, "a.b", 4, false); err != nil {
		t.Fatal(err)
	}
	if top, _ := table.Topic("a.b"); top.PartitionCount != 4 || !slices.Equal(indexes(top), []int32{0, 1, 2, 3}) {
		t.Errorf("after adding partitions: %d, %v; want 4, [0 1 2 3]", top.PartitionCount, indexes(top))
	}

	set := func(m map[string]string) (map[string]string, error) {
		m[metadata.RetentionMs] = "1000"
		return m, nil
	}
	if err := table.AlterTopicConfigs(ctx, "a.b", set, false); err != nil {
		t.Fatal(err)
	}
	if top, _ := table.Topic("a.b"); top.Configs[metadata.RetentionMs] != "1000" || top.Resolved.RetentionMs != 1000 {
		t.Errorf("after alter: configs %v, resolved retention %d", top.Configs, top.Resolved.RetentionMs)
	}
	if err := table.AlterTopicConfigs(ctx, "nope", set, false); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Errorf("alter an unknown topic: %v", err)
	}

	if err := table.DeleteTopic(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if _, ok := table.Topic("a.b"); ok {
		t.Error("a deleted topic is served")
	}
	if err := table.DeleteTopic(ctx, "a.b"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Errorf("delete twice: %v, want ErrUnknownTopic", err)
	}
	if _, err := table.CreateTopic(ctx, "a_b", 1, 1, nil, false); err != nil {
		t.Errorf("a_b once a.b is deleted: %v", err)
	}
	if names := topicNames(table); !slices.Equal(names, []string{"a_b", "d"}) {
		t.Errorf("served %v, want [a_b d]", names)
	}
}

func topicNames(table *Table) []string {
	var out []string
	for _, top := range table.Topics() {
		out = append(out, top.Name)
	}
	return out
}

// TestReconcile: a second agent's table follows the first's changes
// through the store alone: a new topic, added partitions, changed
// configs, a topic re-created under another id (long polls woken) and a
// deletion. Reconcile announces nothing: only the agent that changed a
// topic does.
func TestReconcile(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	one, _ := newTable(store, 0)
	two, twoHost := newTable(store, 0)
	reconcile := func() {
		t.Helper()
		if err := two.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}

	created, err := one.CreateTopic(ctx, "t", 2, 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	reconcile()
	top, ok := two.Topic("t")
	if !ok || top.ID != created.ID || !slices.Equal(indexes(top), []int32{0, 1}) {
		t.Fatalf("adopted: %v, %v", top, ok)
	}

	if err := one.CreatePartitions(ctx, "t", 3, false); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if top, _ := two.Topic("t"); !slices.Equal(indexes(top), []int32{0, 1, 2}) {
		t.Errorf("after partitions added elsewhere: %v, want [0 1 2]", indexes(top))
	}
	if n := len(twoHost.opened); n != 2 || twoHost.opened[1] != (opened{"t", 2, false}) {
		t.Errorf("opened %v; want the new partition opened from index 2", twoHost.opened)
	}

	err = one.AlterTopicConfigs(ctx, "t", func(m map[string]string) (map[string]string, error) {
		m[metadata.RetentionMs] = "2000"
		return m, nil
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	reconcile()
	if top, _ := two.Topic("t"); top.Resolved.RetentionMs != 2000 {
		t.Errorf("after configs changed elsewhere: retention %d, want 2000", top.Resolved.RetentionMs)
	}

	woken := two.DataSignal()
	if err := one.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	recreated, err := one.CreateTopic(ctx, "t", 1, 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	reconcile()
	if top, _ := two.Topic("t"); top.ID != recreated.ID || top.PartitionCount != 1 {
		t.Errorf("after re-creation elsewhere: id %x, %d partitions; want %x, 1", top.ID, top.PartitionCount, recreated.ID)
	}
	if _, ok := two.TopicByID(created.ID); ok {
		t.Error("the first topic of the name is still served by id")
	}
	select {
	case <-woken:
	default:
		t.Error("dropping a topic did not wake the long polls")
	}

	if err := one.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if two.Len() != 0 {
		t.Errorf("after the deletion elsewhere: serving %v", topicNames(two))
	}
	if n := twoHost.announcements(); n != 0 {
		t.Errorf("reconcile announced %d times", n)
	}
}

// TestLoad: a table filled at start opens every stored topic with
// restart set.
func TestLoad(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	one, _ := newTable(store, 0)
	for _, name := range []string{"x", "y"} {
		if _, err := one.CreateTopic(ctx, name, 2, 1, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	restarted, host := newTable(store, 0)
	if err := restarted.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if names := topicNames(restarted); !slices.Equal(names, []string{"x", "y"}) {
		t.Errorf("loaded %v, want [x y]", names)
	}
	if want := []opened{{"x", 0, true}, {"y", 0, true}}; !slices.Equal(host.opened, want) {
		t.Errorf("opened %v, want %v", host.opened, want)
	}
}

// TestInternalTopics: a coordinators' topic is created on first use with
// the coordinators' configs, adopted by an agent that lost the race to
// create it, and, if an older build created it with cleanup.policy=delete
// and nothing of it can be in the bucket alone, moved to compact once:
// the first agent to start wins, the others find it done.
func TestInternalTopics(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	one, _ := newTable(store, 0)
	two, _ := newTable(store, 0)

	old := map[string]string{metadata.RetentionMs: "-1", metadata.CleanupPolicy: "delete"}
	e, err := one.EnsureInternal(ctx, ConsumerOffsets, 3, old)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Snap.Internal || e.Meta.Partitions != 3 || e.Snap.Resolved.Compact {
		t.Fatalf("created: internal %v, %d partitions, compact %v", e.Snap.Internal, e.Meta.Partitions, e.Snap.Resolved.Compact)
	}
	if !e.Snap.Resolved.RemoteStorage {
		t.Fatal("an old-style __consumer_offsets is not tiered: the test would not cover the bucket check")
	}
	if again, err := one.EnsureInternal(ctx, ConsumerOffsets, 5, nil); err != nil || again != e {
		t.Errorf("second use: %v, %v; want the same entry", again, err)
	}
	adopted, err := two.EnsureInternal(ctx, ConsumerOffsets, 3, nil)
	if err != nil || adopted.Meta.ID != e.Meta.ID {
		t.Fatalf("the agent that lost the race: %v, %v", adopted, err)
	}
	limited := map[string]string{metadata.RetentionMs: "-1", metadata.CleanupPolicy: "delete", metadata.LocalRetentionMs: "60000"}
	if _, err := one.EnsureInternal(ctx, TransactionState, 3, limited); err != nil {
		t.Fatal(err)
	}
	if err := two.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	one.CompactInternalTopics(ctx)
	top, _ := one.Topic(ConsumerOffsets)
	if !top.Resolved.Compact || top.Resolved.RemoteStorage || top.Configs[metadata.RetentionMs] != "-1" {
		t.Errorf("after the move: compact %v, tiered %v, configs %v; want compact, untiered, retention kept",
			top.Resolved.Compact, top.Resolved.RemoteStorage, top.Configs)
	}
	if top, _ := one.Topic(TransactionState); top.Resolved.Compact {
		t.Error("a tiered internal topic with limited local retention was moved to compact")
	}
	stored, err := store.Topic(ctx, ConsumerOffsets)
	if err != nil || stored.Configs[metadata.CleanupPolicy] != "compact" {
		t.Fatalf("stored: %v, %v", stored.Configs, err)
	}

	two.CompactInternalTopics(ctx) // finds it done, and leaves it to reconcile
	if top, _ := two.Topic(ConsumerOffsets); top.Resolved.Compact {
		t.Error("the second agent moved the topic again instead of finding it done")
	}
	if err := two.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if top, _ := two.Topic(ConsumerOffsets); !top.Resolved.Compact {
		t.Error("the second agent does not serve the compacted configs after reconcile")
	}
}
