package kafka

// diskless.enable over TCP with franz-go's admin client: CreateTopics,
// IncrementalAlterConfigs, AlterConfigs and DescribeConfigs served by the
// real topic table (agent/topics) on a real metadata store, whose agent
// side and diskless data path are faked. An agent cannot serve a diskless
// topic yet (the gate in agent/topics/diskless.go), so the agent's own
// tests cover only the refusals.

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// peersHost is an agent of the topic table that holds no replica: every
// classic partition is a peer in its stored state.
type peersHost struct{ store *metadata.Store }

func (h peersHost) OpenPartitions(ctx context.Context, t metadata.Topic, _ metadata.Resolved, first int32, _ bool) ([]*partition.Partition, []*partition.Peer, error) {
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
func (peersHost) OpenTiering(context.Context, *partition.Partition) error { return errNotModelled }
func (peersHost) RemoveDir(string, string)                                {}
func (peersHost) PlacementAgents() []int32                                { return []int32{1} }
func (peersHost) Announce() error                                         { return nil }

// disklessPartition is a diskless partition: its index, nothing more.
type disklessPartition struct {
	inertPartition
	index int32
}

func (p disklessPartition) Index() int32 { return p.index }

// disklessPath opens inert diskless partitions.
type disklessPath struct{}

func (disklessPath) OpenDiskless(_ context.Context, t metadata.Topic, _ metadata.Resolved, first int32) ([]Partition, error) {
	var out []Partition
	for i := first; i < t.Partitions; i++ {
		out = append(out, disklessPartition{index: i})
	}
	return out, nil
}

// disklessServer serves a topic table with a diskless data path, or with
// the gate shut when open is false, and returns a client of it.
func disklessServer(t *testing.T, open bool) *kgo.Client {
	t.Helper()
	bucket := objstore.NewMem()
	t.Cleanup(func() { bucket.Close() })
	store := metadata.New(bucket, nil)
	cfg := topics.Config{NumPartitions: 1, Flush: log.FlushAlways}
	if open {
		cfg.Diskless = disklessPath{}
	}
	table := topics.New(cfg, store, peersHost{store}, &partition.Signal{}, slog.New(slog.DiscardHandler))

	ln := listen(t)
	b := newAdminBackend()
	addr := ln.Addr().(*net.TCPAddr)
	b.brokers = []Broker{{ID: b.agentID, Host: "127.0.0.1", Port: int32(addr.Port)}}
	serve(t, New(DefaultConfig(), Backends{Cluster: b, Topics: table, TopicAdmin: table}, nil, nil), ln)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantInvalidConfig fails unless err is INVALID_CONFIG whose message says
// every one of says.
func wantInvalidConfig(t *testing.T, what string, err error, msg string, says ...string) {
	t.Helper()
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("%s: %v (%s), want INVALID_CONFIG", what, err, msg)
		return
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message %q does not say %q", what, msg, s)
		}
	}
}

// describeDiskless is the diskless.enable entry of a topic's
// DescribeConfigs answer, asked with a raw request for its read-only flag
// (kadm drops it).
func describeDiskless(t *testing.T, cl *kgo.Client, topic string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs %s: %+v, %v", topic, resp, err)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == metadata.DisklessEnable {
			return c
		}
	}
	t.Fatalf("DescribeConfigs %s does not list %s", topic, metadata.DisklessEnable)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// TestDisklessOverTCP: a diskless topic is created over the wire and
// described with diskless.enable read-only from the topic's configs; every
// change of its mode, by IncrementalAlterConfigs or by an AlterConfigs
// that leaves it out, and every combination it cannot have is
// INVALID_CONFIG; a classic topic shows it read-only by default and
// cannot turn diskless.
func TestDisklessOverTCP(t *testing.T) {
	cl := disklessServer(t, true)
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t)
	on := map[string]*string{metadata.DisklessEnable: kmsg.StringPtr("true")}

	for _, c := range []struct {
		config, value string
		says          []string
	}{
		{metadata.CleanupPolicy, "compact", []string{"diskless.enable=true cannot be combined with cleanup.policy=compact: compacted diskless topics are not supported"}},
		{metadata.RemoteStorageEnable, "false", []string{"diskless.enable=true", "remote.storage.enable=false"}},
		{metadata.LocalRetentionMs, "60000", []string{"diskless.enable=true", "local.retention.ms=60000"}},
		{metadata.LocalRetentionBytes, "1024", []string{"diskless.enable=true", "local.retention.bytes=1024"}},
	} {
		configs := map[string]*string{metadata.DisklessEnable: kmsg.StringPtr("true"), c.config: kmsg.StringPtr(c.value)}
		resp, err := adm.CreateTopic(ctx, 1, 1, configs, "refused")
		if err == nil {
			err = resp.Err
		}
		wantInvalidConfig(t, "create with "+c.config, err, resp.ErrMessage, c.says...)
	}

	// The replication factor (3, with one live agent) is ignored.
	created, err := adm.CreateTopic(ctx, 2, 3, on, "dl")
	if err == nil {
		err = created.Err
	}
	if err != nil {
		t.Fatalf("create diskless: %v (%s)", err, created.ErrMessage)
	}
	if created.NumPartitions != 2 {
		t.Errorf("created with %d partitions, want 2", created.NumPartitions)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "classic"); err != nil {
		t.Fatal(err)
	}

	if c := describeDiskless(t, cl, "dl"); !c.ReadOnly || c.Value == nil || *c.Value != "true" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("dl's diskless.enable: read-only %v, value %v, source %v; want read-only true from the topic", c.ReadOnly, c.Value, c.Source)
	}
	if c := describeDiskless(t, cl, "classic"); !c.ReadOnly || c.Value == nil || *c.Value != "false" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("classic's diskless.enable: read-only %v, value %v, source %v; want read-only, false, by default", c.ReadOnly, c.Value, c.Source)
	}

	incremental := func(topic string, ops ...kadm.AlterConfig) (string, error) {
		resps, err := adm.AlterTopicConfigs(ctx, ops, topic)
		if err != nil {
			return "", err
		}
		return resps[0].ErrMessage, resps[0].Err
	}
	replace := func(topic string, configs ...kadm.AlterConfig) (string, error) {
		resps, err := adm.AlterTopicConfigsState(ctx, configs, topic)
		if err != nil {
			return "", err
		}
		return resps[0].ErrMessage, resps[0].Err
	}
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Name: k, Value: kmsg.StringPtr(v)} }
	const fixed = "diskless.enable cannot be changed after creation (topic dl has diskless.enable=true); create a new topic and copy the records"

	msg, err := incremental("dl", set(metadata.DisklessEnable, "false"))
	wantInvalidConfig(t, "incremental set false", err, msg, fixed)
	msg, err = incremental("dl", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: metadata.DisklessEnable})
	wantInvalidConfig(t, "incremental delete", err, msg, fixed)
	msg, err = replace("dl", set(metadata.RetentionMs, "1000"))
	wantInvalidConfig(t, "replacement leaving it out", err, msg, fixed)
	msg, err = replace("dl", set(metadata.DisklessEnable, "true"), set(metadata.CleanupPolicy, "compact"))
	wantInvalidConfig(t, "replacement adding compact", err, msg, "diskless.enable=true cannot be combined with cleanup.policy=compact")
	msg, err = incremental("dl", set(metadata.LocalRetentionBytes, "1"))
	wantInvalidConfig(t, "incremental local retention", err, msg, "local.retention.bytes=1", "no local log")

	if msg, err := incremental("dl", set(metadata.DisklessEnable, "true"), set(metadata.RetentionMs, "2000")); err != nil {
		t.Errorf("incremental set to its value: %v (%s)", err, msg)
	}
	if msg, err := replace("dl", set(metadata.DisklessEnable, "true"), set(metadata.RetentionMs, "3000")); err != nil {
		t.Errorf("replacement keeping it: %v (%s)", err, msg)
	}
	if c := describeDiskless(t, cl, "dl"); c.Value == nil || *c.Value != "true" {
		t.Errorf("dl's diskless.enable after the refusals: %v", c.Value)
	}

	msg, err = incremental("classic", set(metadata.DisklessEnable, "true"))
	wantInvalidConfig(t, "classic turned diskless", err, msg, "topic classic has diskless.enable=false")
	if msg, err := incremental("classic", set(metadata.DisklessEnable, "false")); err != nil {
		t.Errorf("classic's diskless.enable set to its value: %v (%s)", err, msg)
	}
}
