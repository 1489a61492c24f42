package topics

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// disklessPart is a diskless partition as the table holds it; only Index
// and Replicas are modelled.
type disklessPart struct {
	dataplane.Partition
	index int32
}

func (p disklessPart) Index() int32      { return p.index }
func (p disklessPart) Replicas() []int32 { return nil }

// fakeDiskless is a diskless data path that records what it opened.
type fakeDiskless struct {
	mu     sync.Mutex
	opened []opened // restart is always false
}

var _ DisklessPartitions = (*fakeDiskless)(nil)

func (d *fakeDiskless) OpenDiskless(_ context.Context, t metadata.Topic, _ metadata.Resolved, first int32) ([]dataplane.Partition, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opened = append(d.opened, opened{topic: t.Name, first: first})
	var out []dataplane.Partition
	for i := first; i < t.Partitions; i++ {
		out = append(out, disklessPart{index: i})
	}
	return out, nil
}

// newDisklessTable is newTable with the diskless data path d; nil keeps
// the gate shut.
func newDisklessTable(store *metadata.Store, d *fakeDiskless, agents ...int32) (*Table, *fakeHost) {
	h := &fakeHost{store: store, agents: agents}
	cfg := testConfig()
	if d != nil {
		cfg.Diskless = d
	}
	return New(cfg, store, h, &partition.Signal{}, quiet), h
}

// wantInvalidConfig fails unless err is ErrInvalidConfig saying every
// one of says.
func wantInvalidConfig(t *testing.T, what string, err error, says ...string) {
	t.Helper()
	if !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("%s: %v, want ErrInvalidConfig", what, err)
		return
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not say %q", what, err, s)
		}
	}
}

var diskless = map[string]string{metadata.DisklessEnable: "true"}

// with is configs and kv.
func with(configs map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range configs {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestDisklessRefusedCombinations: the table refuses the combinations a
// diskless topic cannot have, with their own messages, and a diskless
// internal topic; nothing reaches the store.
func TestDisklessRefusedCombinations(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	table, _ := newDisklessTable(store, &fakeDiskless{}, 0, 1, 2)

	for _, c := range []struct {
		kv   []string
		says []string
	}{
		{[]string{metadata.CleanupPolicy, "compact"},
			[]string{"diskless.enable=true cannot be combined with cleanup.policy=compact: compacted diskless topics are not supported"}},
		{[]string{metadata.RemoteStorageEnable, "false"}, []string{"diskless.enable=true cannot be combined with remote.storage.enable=false"}},
		{[]string{metadata.LocalRetentionMs, "1000"}, []string{"diskless.enable=true cannot be combined with local.retention.ms=1000"}},
		{[]string{metadata.LocalRetentionBytes, "1000"}, []string{"diskless.enable=true cannot be combined with local.retention.bytes=1000"}},
	} {
		_, err := table.CreateTopic(ctx, "dl", 2, 1, with(diskless, c.kv...), false)
		wantInvalidConfig(t, "diskless with "+strings.Join(c.kv, "="), err, c.says...)
	}
	_, err := table.EnsureInternal(ctx, ConsumerOffsets, 3, diskless)
	wantInvalidConfig(t, "diskless internal topic", err, ConsumerOffsets, "internal and cannot be diskless")

	if _, err := store.Topic(ctx, "dl"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Errorf("a refused diskless topic is in the store: %v", err)
	}
}

// TestDisklessTopic: with a diskless data path, a diskless topic gets no
// placement, no partition states and no Host partitions, through
// creation, growth, reconcile and restart; its mode cannot change, and it
// refuses by AlterConfigs what it refused at creation.
func TestDisklessTopic(t *testing.T) {
	ctx := ctxT(t)
	store := newStore()
	path := &fakeDiskless{}
	table, host := newDisklessTable(store, path, 0, 1, 2)

	// A replication factor above the live agents is accepted and ignored.
	top, err := table.CreateTopic(ctx, "dl", 2, 5, diskless, false)
	if err != nil {
		t.Fatal(err)
	}
	if !top.Resolved.Diskless || top.PartitionCount != 2 || !slices.Equal(indexes(top), []int32{0, 1}) {
		t.Fatalf("created: diskless %v, %d partitions %v", top.Resolved.Diskless, top.PartitionCount, indexes(top))
	}
	if _, ok := top.Configs[metadata.MinInsyncReplicas]; ok {
		t.Errorf("a diskless topic got min.insync.replicas: %v", top.Configs)
	}
	e, _ := table.Entry("dl")
	if len(e.Parts) != 0 || len(e.Peers) != 0 || len(e.Diskless) != 2 {
		t.Errorf("entry: %d parts, %d peers, %d diskless; want 0, 0, 2", len(e.Parts), len(e.Peers), len(e.Diskless))
	}
	noStates := func(when string, partitions int32) {
		t.Helper()
		for p := range partitions {
			if _, _, err := store.PartitionState(ctx, top.ID, p); !errors.Is(err, metadata.ErrUnknownPartition) {
				t.Errorf("%s: partition %d has a state (%v)", when, p, err)
			}
		}
	}
	noStates("after create", 2)

	if err := table.CreatePartitions(ctx, "dl", 3, false); err != nil {
		t.Fatal(err)
	}
	if top, _ := table.Topic("dl"); !slices.Equal(indexes(top), []int32{0, 1, 2}) {
		t.Errorf("after growth: %v, want [0 1 2]", indexes(top))
	}
	noStates("after growth", 3)

	set := func(kv ...string) func(map[string]string) (map[string]string, error) {
		return func(m map[string]string) (map[string]string, error) { return with(m, kv...), nil }
	}
	drop := func(m map[string]string) (map[string]string, error) {
		delete(m, metadata.DisklessEnable)
		return m, nil
	}
	const fixed = "diskless.enable cannot be changed after creation (topic dl has diskless.enable=true); create a new topic and copy the records"
	for _, validateOnly := range []bool{true, false} {
		wantInvalidConfig(t, "turn off", table.AlterTopicConfigs(ctx, "dl", set(metadata.DisklessEnable, "false"), validateOnly), fixed)
		wantInvalidConfig(t, "delete", table.AlterTopicConfigs(ctx, "dl", drop, validateOnly), fixed)
		wantInvalidConfig(t, "compact", table.AlterTopicConfigs(ctx, "dl", set(metadata.CleanupPolicy, "compact"), validateOnly),
			"diskless.enable=true cannot be combined with cleanup.policy=compact")
		wantInvalidConfig(t, "local retention", table.AlterTopicConfigs(ctx, "dl", set(metadata.LocalRetentionMs, "1"), validateOnly),
			"local.retention.ms=1")
	}
	if err := table.AlterTopicConfigs(ctx, "dl", set(metadata.DisklessEnable, "true", metadata.RetentionMs, "1000"), false); err != nil {
		t.Fatalf("diskless.enable to its value and another config: %v", err)
	}
	if top, _ := table.Topic("dl"); top.Resolved.RetentionMs != 1000 || !top.Resolved.Diskless || len(top.Partitions) != 3 {
		t.Errorf("after alter: retention %d, diskless %v, %d partitions", top.Resolved.RetentionMs, top.Resolved.Diskless, len(top.Partitions))
	}

	if _, err := table.CreateTopic(ctx, "classic", 1, 1, nil, false); err != nil {
		t.Fatal(err)
	}
	wantInvalidConfig(t, "classic turned diskless", table.AlterTopicConfigs(ctx, "classic", set(metadata.DisklessEnable, "true"), false),
		"diskless.enable cannot be changed after creation (topic classic has diskless.enable=false)")
	if err := table.AlterTopicConfigs(ctx, "classic", set(metadata.DisklessEnable, "false"), false); err != nil {
		t.Errorf("classic topic's diskless.enable set to its value: %v", err)
	}
	for _, o := range host.opened {
		if o.topic != "classic" {
			t.Errorf("the Host opened %v", o)
		}
	}

	// Another agent adopts it, and one that starts loads it, through the
	// diskless data path.
	otherPath := &fakeDiskless{}
	other, otherHost := newDisklessTable(store, otherPath, 0)
	if err := other.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	restartedPath := &fakeDiskless{}
	restarted, restartedHost := newDisklessTable(store, restartedPath, 0)
	if err := restarted.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		table *Table
		path  *fakeDiskless
		host  *fakeHost
	}{"reconciled": {other, otherPath, otherHost}, "restarted": {restarted, restartedPath, restartedHost}} {
		if top, ok := c.table.Topic("dl"); !ok || !slices.Equal(indexes(top), []int32{0, 1, 2}) {
			t.Errorf("%s: serves dl %v", name, ok)
		}
		if want := []opened{{"dl", 0, false}}; !slices.Equal(c.path.opened, want) {
			t.Errorf("%s: diskless path opened %v, want %v", name, c.path.opened, want)
		}
		if slices.ContainsFunc(c.host.opened, func(o opened) bool { return o.topic == "dl" }) {
			t.Errorf("%s: the Host opened %v", name, c.host.opened)
		}
	}

	if err := table.DeleteTopic(ctx, "dl"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Topic(ctx, "dl"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Errorf("after delete: %v", err)
	}
	if err := other.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := other.Topic("dl"); ok {
		t.Error("a deleted diskless topic is still served elsewhere")
	}
}
