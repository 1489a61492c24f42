package agent

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/agent/metadata"
)

// TestInternalTopicsMovedToCompact: a __consumer_offsets created as an
// older build did, tiered with cleanup.policy=delete and retention.ms=-1,
// is compacted after a restart: the stored configs (its others kept),
// what DescribeConfigs shows, and the local logs the cleaner looks at.
// Committed offsets survive the change. A __transaction_state whose
// local retention is limited, so that part of it may be in the bucket
// alone, is left as it was.
func TestInternalTopicsMovedToCompact(t *testing.T) {
	cfg := txnConfig(t)
	old := start(t, cfg, nil)
	for name, configs := range map[string]map[string]string{
		offsetsTopic: {metadata.RetentionMs: "-1", metadata.CleanupPolicy: "delete"},
		txnTopic:     {metadata.RetentionMs: "-1", metadata.CleanupPolicy: "delete", metadata.LocalRetentionMs: "60000"},
	} {
		if _, err := old.topics.EnsureInternal(context.Background(), name, 3, configs); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := old.Topic(offsetsTopic); !st.Resolved.RemoteStorage {
		t.Fatal("the old-style __consumer_offsets is not tiered: the test would not cover the default")
	}
	admin := old.client(t)
	createTopic(t, admin, "some-topic", 1, nil)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "some-topic", Partition: 0, At: 42, LeaderEpoch: -1})
	committed, err := kadm.NewClient(admin).CommitOffsets(ctxT(t), "group-before-upgrade", offsets)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if p := localPartition(old, offsetsTopic, 0); p.LocalLog().CleanState(p.HighWatermark()).Compact {
		t.Fatal("the old-style __consumer_offsets is compacted before the restart: the test would prove nothing")
	}
	old.stop(t)

	r := start(t, cfg, nil)
	if st, _ := r.Topic(txnTopic); st.Configs[metadata.CleanupPolicy] != "delete" {
		t.Fatalf("%s with limited local retention moved to %q; part of it may be in the bucket alone",
			txnTopic, st.Configs[metadata.CleanupPolicy])
	}
	name := offsetsTopic
	st, ok := r.Topic(name)
	if !ok {
		t.Fatalf("%s is gone", name)
	}
	if got := st.Configs[metadata.CleanupPolicy]; got != "compact" {
		t.Fatalf("%s: cleanup.policy %q after the restart, want compact", name, got)
	}
	if got := st.Configs[metadata.RetentionMs]; got != "-1" {
		t.Fatalf("%s: retention.ms %q, want the stored -1 kept", name, got)
	}
	for _, p := range localPartitionsOf(r, name) {
		if !p.LocalLog().CleanState(p.HighWatermark()).Compact {
			t.Fatalf("%s-%d: local log not compacted after the move", name, p.Index())
		}
	}
	described, err := kadm.NewClient(r.client(t)).DescribeTopicConfigs(ctxT(t), offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On(offsetsTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == metadata.CleanupPolicy && (c.Value == nil || *c.Value != "compact") {
			t.Fatalf("DescribeConfigs shows cleanup.policy %v", c.Value)
		}
	}
	fetched, err := kadm.NewClient(r.client(t)).FetchOffsets(ctxT(t), "group-before-upgrade")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("some-topic", 0); !ok || o.At != 42 {
		t.Fatalf("committed offset after the move: %+v (%v), want 42", o, ok)
	}
}
