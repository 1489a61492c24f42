package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/vfs"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestRestartKeepsTopicsAndRecords: topics (id, partitions, configs), the
// agent id and every acknowledged record come back after a clean restart.
func TestRestartKeepsTopicsAndRecords(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testConfig(dir), nil)
	cl := a.client(t)
	id := createTopic(t, cl, "keep", 2, map[string]string{"retention.ms": "3600000"})
	var want []string
	for i := range 5 {
		v := "v" + string(rune('0'+i))
		if code, off := produceRaw(t, cl, "keep", 1, v); code != 0 || off != int64(i) {
			t.Fatalf("produce %d: code %d offset %d", i, code, off)
		}
		want = append(want, v)
	}
	agentID := a.AgentID()
	cl.Close()
	a.stop(t)
	for i := range 2 {
		mark := filepath.Join(dir, "log", fmt.Sprintf("keep-%d", i), "clean-shutdown")
		if _, err := os.Stat(mark); err != nil {
			t.Errorf("no clean-shutdown mark after a clean stop: %v", err)
		}
	}

	b := start(t, testConfig(dir), nil)
	if b.AgentID() != agentID {
		t.Errorf("agent id %d after restart, want %d", b.AgentID(), agentID)
	}
	topic, ok := b.Topic("keep")
	if !ok {
		t.Fatal("topic gone after restart")
	}
	if topic.ID != id || topic.PartitionCount != 2 || topic.Configs["retention.ms"] != "3600000" {
		t.Errorf("topic after restart: id %x partitions %d configs %v", topic.ID, topic.PartitionCount, topic.Configs)
	}
	if got := fetchValues(t, b.client(t), "keep", 1); !slices.Equal(got, want) {
		t.Errorf("records after restart %q, want %q", got, want)
	}
}

// TestDeletedTopicLeavesNoData: deleting a topic removes its directories,
// and a re-created topic of the same name starts empty.
func TestDeletedTopicLeavesNoData(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testConfig(dir), nil)
	cl := a.client(t)
	createTopic(t, cl, "gone", 1, nil)
	if code, _ := produceRaw(t, cl, "gone", 0, "old"); code != 0 {
		t.Fatalf("produce: code %d", code)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"gone"} // v0-5
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("gone") // v6+
	req.Topics = append(req.Topics, dt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	if _, err := os.Stat(filepath.Join(dir, "log", "gone-0")); !os.IsNotExist(err) {
		t.Errorf("partition directory still there after delete: %v", err)
	}
	createTopic(t, cl, "gone", 1, nil)
	if got := fetchValues(t, cl, "gone", 0); len(got) != 0 {
		t.Errorf("re-created topic holds %q", got)
	}
}

// TestRequestRacingDeleteSeesUnknownPartition: a handler that took a
// partition just before DeleteTopic closed it gets "unknown topic or
// partition" (what Kafka answers), not a storage error.
func TestRequestRacingDeleteSeesUnknownPartition(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	createTopic(t, a.client(t), "racing", 1, nil)
	kt, _ := a.Topic("racing")
	p := kt.Partitions[0] // what a request in flight holds
	if err := a.topics.DeleteTopic(ctxT(t), "racing"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(context.Background(), 0, 1024, true); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Errorf("read of a deleted partition: %v, want ErrUnknownTopicOrPartition", err)
	}
	if err := p.DeleteRecordsBefore(context.Background(), 0); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Errorf("delete records of a deleted partition: %v", err)
	}
	if _, _, err := p.Append(recordBatch(t, "late"), -1); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Errorf("append to a deleted partition: %v", err)
	}
}

// TestFullDiskFailsProduceWithStorageError: a write error (ENOSPC) fails
// that produce with KAFKA_STORAGE_ERROR; earlier records stay readable,
// and once space is back the log goes on at the next offset.
func TestFullDiskFailsProduceWithStorageError(t *testing.T) {
	fs := vfs.NewFaulty(vfs.Default)
	a := start(t, testConfig(t.TempDir()), fs)
	cl := a.client(t)
	createTopic(t, cl, "full", 1, nil)
	if code, _ := produceRaw(t, cl, "full", 0, "before"); code != 0 {
		t.Fatalf("produce before: code %d", code)
	}
	fs.FailAfter(vfs.OpWrite, 0, syscall.ENOSPC)
	fs.SetShortWrites(true)
	if code, _ := produceRaw(t, cl, "full", 0, "during"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce on a full disk: code %d, want KAFKA_STORAGE_ERROR (%d)", code, kerr.KafkaStorageError.Code)
	}
	if got := fetchValues(t, cl, "full", 0); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("records while the disk is full: %q", got)
	}
	fs.Clear()
	if code, off := produceRaw(t, cl, "full", 0, "after"); code != 0 || off != 1 {
		t.Fatalf("produce after space is back: code %d offset %d, want 0 at offset 1", code, off)
	}
	if got := fetchValues(t, cl, "full", 0); !slices.Equal(got, []string{"before", "after"}) {
		t.Fatalf("records after the disk recovered: %q", got)
	}
}

// TestMinInsyncReplicas: min.insync.replicas above the replication factor
// counts as the replication factor (as Kafka since KIP-966), so a topic of
// one replica with min.insync.replicas=2 still takes acks=all; the cluster
// tests show NOT_ENOUGH_REPLICAS when an ISR really is too small.
func TestMinInsyncReplicas(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	cl := a.client(t)
	createTopic(t, cl, "isr", 1, map[string]string{"min.insync.replicas": "2"})
	if code, off := produceRaw(t, cl, "isr", 0, "x"); code != 0 || off != 0 {
		t.Errorf("acks=all, one replica, min.insync.replicas=2: code %d offset %d, want 0 at 0", code, off)
	}
	leaderAcks := a.client(t, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if code, off := produceRaw(t, leaderAcks, "isr", 0, "y"); code != 0 || off != 1 {
		t.Errorf("acks=1: code %d offset %d", code, off)
	}
}

// TestDataDirGuards: a data directory is locked by its agent, and one that
// belongs to another cluster's store is refused by name.
func TestDataDirGuards(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testConfig(dir), nil)
	if _, err := New(context.Background(), testConfig(dir), Options{Logger: quiet}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second agent on one data dir: %v, want an 'in use' error", err)
	}
	a.stop(t)

	other := testConfig(dir)
	other.Store = "file://" + filepath.Join(t.TempDir(), "other-store")
	_, err := New(context.Background(), other, Options{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "belongs to cluster") {
		t.Errorf("data dir of another cluster: %v, want a 'belongs to cluster' error", err)
	}
}

// TestConfigValidate: every bad setting is refused with its flag's name.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"data dir", func(c *Config) { c.DataDir = "" }, "--data-dir"},
		{"kafka addr", func(c *Config) { c.KafkaAddr = "9092" }, "--kafka-addr"},
		{"advertised", func(c *Config) { c.AdvertisedKafkaAddr = "host:0" }, "--advertised-kafka-addr"},
		{"agent id", func(c *Config) { c.AgentID = -2 }, "--agent-id"},
		{"partitions", func(c *Config) { c.NumPartitions = 0 }, "--num-partitions"},
		{"flush", func(c *Config) { c.LogFlush = "sometimes" }, "--log-flush"},
		{"request size", func(c *Config) { c.Kafka.MaxRequestBytes = 10 }, "--socket-request-max-bytes"},
		{"http connections", func(c *Config) { c.HTTPMaxConnections = 0 }, "--http-max-connections"},
		{"topics per request", func(c *Config) { c.Kafka.MaxTopicsPerRequest = 0 }, "--max-topics-per-request"},
		{"transaction version", func(c *Config) { c.Kafka.TransactionVersion = 3 }, "--transaction-version"},
		{"auto-create rate", func(c *Config) { c.Kafka.AutoCreateTopicsRate = 0 }, "--auto-create-topics-rate"},
		{"auto-create per request", func(c *Config) { c.Kafka.AutoCreateTopicsPerRequest = 0 }, "--auto-create-topics-per-request"},
		{"retention default", func(c *Config) { c.TopicDefaults["retention.ms"] = "soon" }, "--log-retention-ms"},
		{"compression default", func(c *Config) { c.TopicDefaults["compression.type"] = "brotli" }, "--compression-type"},
		{"diskless default", func(c *Config) { c.TopicDefaults["diskless.enable"] = "false" }, "diskless.enable cannot have an agent-level default"},
		{"authorizer", func(c *Config) { c.Authorizer = "ranger" }, "--authorizer"},
		{"super users without authorizer", func(c *Config) { c.SuperUsers = "User:admin" }, "--super-users"},
		{"allow if no ACL without authorizer", func(c *Config) { c.AllowEveryoneIfNoACLFound = true }, "--allow-everyone-if-no-acl-found"},
		{"super user form", func(c *Config) { c.Authorizer, c.SuperUsers = "acl", "User:admin;admin" }, "--super-users"},
		{"OAUTHBEARER without a JWKS", func(c *Config) { c.Kafka.SASLEnabledMechanisms = []string{"OAUTHBEARER"} }, "--sasl-oauthbearer-jwks-endpoint-url"},
		{"JWKS URL scheme", func(c *Config) { c.OAuthBearer.JWKSEndpointURL = "ftp://idp/jwks" }, "--sasl-oauthbearer-jwks-endpoint-url"},
		{"JWKS refresh", func(c *Config) {
			c.OAuthBearer.JWKSEndpointURL, c.OAuthBearer.JWKSRefresh = "https://idp/jwks", time.Second
		}, "--sasl-oauthbearer-jwks-endpoint-url"},
		{"clock skew", func(c *Config) {
			c.OAuthBearer.JWKSEndpointURL, c.OAuthBearer.ClockSkew = "https://idp/jwks", -time.Second
		}, "--sasl-oauthbearer-clock-skew"},
		{"sub claim", func(c *Config) { c.OAuthBearer.JWKSEndpointURL, c.OAuthBearer.SubClaimName = "https://idp/jwks", "" }, "--sasl-oauthbearer-sub-claim-name"},
		{"reauth", func(c *Config) { c.Kafka.ConnectionsMaxReauth = -time.Second }, "--connections-max-reauth"},
		{"two ids", func(c *Config) { c.AgentID, c.AgentIDFromHostname = 2, true }, "--agent-id-from-hostname"},
		{"replace after", func(c *Config) { c.ReplaceDeadAgentAfter = -time.Second }, "--replace-dead-agent-after"},
		{"network capacity", func(c *Config) { c.NetworkCapacity = -1 }, "--network-capacity"},
		{"listeners", func(c *Config) { c.Listeners = "PLAINTEXT://:9092,SSL://:9094" }, "--tls-cert-file"},
		{"listener mechanisms", func(c *Config) {
			c.Listeners, c.Kafka.SASLEnabledMechanisms = "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093", nil
		}, "--sasl-enabled-mechanisms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

// TestRetentionLoopDeletesOldSegments: the agent's retention loop applies
// a topic's retention.bytes to its log, so the log start moves forward and
// the oldest records disappear while the newest stay. The topic is not
// tiered: this is local retention alone.
func TestRetentionLoopDeletesOldSegments(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.RetentionCheckInterval = 10 * time.Millisecond
	a := start(t, cfg, nil)
	cl := a.client(t)
	createTopic(t, cl, "short", 1, map[string]string{"segment.bytes": "200", "retention.bytes": "400", "remote.storage.enable": "false"})
	for i := range 20 {
		if code, _ := produceRaw(t, cl, "short", 0, fmt.Sprintf("record-%02d", i)); code != 0 {
			t.Fatalf("produce %d: code %d", i, code)
		}
	}
	p := localPartition(a, "short", 0)
	deadline := time.Now().Add(20 * time.Second)
	// Kafka's rule keeps less than retention.bytes plus one segment.
	for p.LogStartOffset() == 0 || p.Size() > 400+200 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: log start %d, %d bytes in %d segments (retention.bytes=400, segment.bytes=200)",
				p.LogStartOffset(), p.Size(), p.LocalLog().Segments())
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := fetchValuesFrom(t, cl, "short", 0, p.LogStartOffset())
	if len(got) == 0 || got[len(got)-1] != "record-19" {
		t.Errorf("records after retention %q: the newest must stay", got)
	}
}

// TestUnreadableTopicKeepsItsData: a topic whose topic.json this agent
// cannot read (here: written by a newer version) is not served, but its
// partition directories are kept, not taken for a deleted topic's.
func TestUnreadableTopicKeepsItsData(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testConfig(dir), nil)
	cl := a.client(t)
	id := createTopic(t, cl, "future", 1, nil)
	if code, _ := produceRaw(t, cl, "future", 0, "keep me"); code != 0 {
		t.Fatalf("produce: code %d", code)
	}
	cl.Close()
	a.stop(t)

	store, err := objstore.NewFS(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	key := "topics/" + metadata.FormatTopicID(id) + "/topic.json"
	if _, err := store.Put(context.Background(), key, []byte(`{"version": 99}`), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	b := start(t, testConfig(dir), nil)
	if _, ok := b.Topic("future"); ok {
		t.Error("a topic of a newer version is served")
	}
	if _, err := os.Stat(filepath.Join(dir, "log", "future-0", "00000000000000000000.log")); err != nil {
		t.Errorf("the unreadable topic's data was removed: %v", err)
	}
}

func TestHostOrdinal(t *testing.T) {
	for host, want := range map[string]int32{"strata-3": 3, "strata-0": 0, "my-cluster-strata-12": 12, "strata-7.strata.ns.svc.cluster.local": 7} {
		if got, err := hostOrdinal(host); err != nil || got != want {
			t.Errorf("hostOrdinal(%q) = %d, %v; want %d", host, got, err, want)
		}
	}
	for _, host := range []string{"strata", "strata-", "strata-x", "strata3", "strata-+3", "strata-99999999999", ""} {
		if got, err := hostOrdinal(host); err == nil || !strings.Contains(err.Error(), "--agent-id-from-hostname") {
			t.Errorf("hostOrdinal(%q) = %d, %v; want an error naming the flag", host, got, err)
		}
	}
}
