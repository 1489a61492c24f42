package kafka

// Unit tests of the admin handlers (admin.go and one file per key) against
// in-memory backend families. End-to-end tests with real clients live elsewhere.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/internal/kafkawire"
)

// adminBackend is the in-memory Cluster, TopicReader and TopicAdmin behind
// the admin handler tests and the compatibility-table test. It defines
// only what the admin handlers call; the other methods of those families
// answer as an unset family does (unset.go), and the server is built
// without the other families.
type adminBackend struct {
	unset
	mu           sync.Mutex
	agentID      int32
	brokers      []Broker
	topics       map[string]*Topic
	defaults     metadata.Defaults
	agentConfigs []metadata.ConfigEntry
	dataDir      string
	// createdPartitions records CreatePartitions calls that were applied.
	createdPartitions map[string]int32
	alterCalls        int
}

func newAdminBackend() *adminBackend {
	return &adminBackend{
		unset:             unset{"not modelled by adminBackend"},
		agentID:           1,
		brokers:           []Broker{{ID: 1, Host: "127.0.0.1", Port: 9092}, {ID: 2, Host: "127.0.0.1", Port: 9093}},
		topics:            map[string]*Topic{},
		createdPartitions: map[string]int32{},
	}
}

// addTopic adds a topic whose partitions are all local replicas led by
// this agent, with replication factor 1.
func (b *adminBackend) addTopic(name string, configs map[string]string, parts ...*adminPartition) *Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := &Topic{Name: name, Configs: configs, PartitionCount: int32(len(parts)), ReplicationFactor: 1}
	t.ID[0] = byte(len(b.topics) + 1)
	for _, p := range parts {
		t.Partitions = append(t.Partitions, p)
	}
	b.topics[name] = t
	return t
}

func (b *adminBackend) ClusterID() string                      { return "test-cluster" }
func (b *adminBackend) AgentID() int32                         { return b.agentID }
func (b *adminBackend) Brokers() []Broker                      { return b.brokers }
func (b *adminBackend) DataDir() string                        { return b.dataDir }
func (b *adminBackend) AgentConfigs() []metadata.ConfigEntry   { return b.agentConfigs }
func (b *adminBackend) TopicConfigDefaults() metadata.Defaults { return b.defaults }

func (b *adminBackend) Topics() []*Topic {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Collect(maps.Values(b.topics))
}

func (b *adminBackend) Topic(name string) (*Topic, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	return t, ok
}

func (b *adminBackend) CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[name]
	if !ok {
		return metadata.ErrUnknownTopic
	}
	if total <= t.PartitionCount {
		return fmt.Errorf("%w: %d <= %d", metadata.ErrInvalidPartitions, total, t.PartitionCount)
	}
	if !validateOnly {
		b.createdPartitions[name] = total
	}
	return nil
}

// AlterTopicConfigs validates fn's result as the agent does, with the
// table in agent/metadata.
func (b *adminBackend) AlterTopicConfigs(ctx context.Context, name string, fn func(map[string]string) (map[string]string, error), validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alterCalls++
	t, ok := b.topics[name]
	if !ok {
		return metadata.ErrUnknownTopic
	}
	next, err := fn(maps.Clone(t.Configs))
	if err != nil {
		return err
	}
	if err := metadata.ValidateTopicConfigs(next); err != nil {
		return err
	}
	if !validateOnly {
		t.Configs = next
	}
	return nil
}

// adminServer returns a server of b's families; handlers are called
// directly.
func adminServer(b *adminBackend) *Server {
	return New(DefaultConfig(), Backends{Cluster: b, Topics: b, TopicAdmin: b}, nil, nil)
}

// adminPartition is a local replica with fixed offsets and an epoch cache
// of (epoch, start offset) entries in increasing order. It defines what
// the admin handlers call; the rest is inertPartition's.
type adminPartition struct {
	inertPartition
	mu        sync.Mutex
	index     int32
	leader    int32
	epoch     int32
	hw, lso   int64
	leo, size int64
	epochs    [][2]int64
	deleteErr error
}

func (p *adminPartition) Index() int32         { return p.index }
func (p *adminPartition) Leader() int32        { return p.leader }
func (p *adminPartition) LeaderEpoch() int32   { return p.epoch }
func (p *adminPartition) Local() bool          { return true }
func (p *adminPartition) Size() int64          { return p.size }
func (p *adminPartition) HighWatermark() int64 { p.mu.Lock(); defer p.mu.Unlock(); return p.hw }
func (p *adminPartition) LogStartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lso
}

// OffsetForLeaderEpoch fences like the agent's machine does.
func (p *adminPartition) OffsetForLeaderEpoch(current, epoch int32) (int32, int64, error) {
	switch le := p.LeaderEpoch(); {
	case current >= 0 && current < le:
		return -1, -1, replica.ErrFencedLeaderEpoch
	case current > le:
		return -1, -1, replica.ErrUnknownLeaderEpoch
	}
	for i := len(p.epochs) - 1; i >= 0; i-- {
		if int32(p.epochs[i][0]) <= epoch {
			if i == len(p.epochs)-1 {
				return int32(p.epochs[i][0]), p.leo, nil
			}
			return int32(p.epochs[i][0]), p.epochs[i+1][1], nil
		}
	}
	return -1, -1, nil
}

func (p *adminPartition) DeleteRecordsBefore(ctx context.Context, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleteErr != nil {
		return p.deleteErr
	}
	if offset > p.leo || offset < 0 {
		return log.ErrOffsetOutOfRange
	}
	if offset > p.lso {
		p.lso = offset
	}
	return nil
}

func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: error code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), w, want)
	}
}

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = name, op, value
	return c
}

const (
	opSet      = kmsg.IncrementalAlterConfigOpSet
	opDelete   = kmsg.IncrementalAlterConfigOpDelete
	opAppend   = kmsg.IncrementalAlterConfigOpAppend
	opSubtract = kmsg.IncrementalAlterConfigOpSubtract
)

func TestApplyIncremental(t *testing.T) {
	tests := []struct {
		name     string
		current  map[string]string
		defaults metadata.Defaults
		ops      []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want     map[string]string
	}{
		{"set adds", map[string]string{}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opSet, strptr("1000"))},
			map[string]string{"retention.ms": "1000"}},
		{"set replaces, others kept", map[string]string{"retention.ms": "5", "segment.ms": "7"}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opSet, strptr("6"))},
			map[string]string{"retention.ms": "6", "segment.ms": "7"}},
		{"delete removes, value ignored", map[string]string{"retention.ms": "5", "segment.ms": "7"}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opDelete, strptr("junk"))},
			map[string]string{"segment.ms": "7"}},
		{"delete absent is no-op", map[string]string{}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("retention.ms", opDelete, nil)},
			map[string]string{}},
		{"append starts from built-in default and skips present", map[string]string{}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, strptr("delete, compact"))},
			map[string]string{"cleanup.policy": "delete,compact"}},
		{"append starts from agent default", map[string]string{}, metadata.Defaults{"cleanup.policy": "compact"},
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opAppend, strptr("delete"))},
			map[string]string{"cleanup.policy": "compact,delete"}},
		{"subtract from topic value", map[string]string{"cleanup.policy": "compact,delete"}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opSubtract, strptr("compact"))},
			map[string]string{"cleanup.policy": "delete"}},
		{"subtract absent item keeps value", map[string]string{}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opSubtract, strptr("compact"))},
			map[string]string{"cleanup.policy": "delete"}},
		{"subtract last leaves empty", map[string]string{}, nil,
			[]kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp("cleanup.policy", opSubtract, strptr("delete"))},
			map[string]string{"cleanup.policy": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.current)
			got, err := applyIncremental(tt.current, tt.defaults, tt.ops)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !maps.Equal(tt.current, before) {
				t.Errorf("current modified: %v, was %v", tt.current, before)
			}
		})
	}
}

func TestIncrementalAlterConfigsCodes(t *testing.T) {
	topic := func(name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, name, ops
		return r
	}
	tests := []struct {
		name         string
		resources    []kmsg.IncrementalAlterConfigsRequestResource
		validateOnly bool
		want         []*kerr.Error
		wantConfigs  map[string]string // t's configs afterwards
	}{
		{"set valid", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, strptr("1000")))}, false,
			[]*kerr.Error{nil}, map[string]string{"retention.ms": "1000", "segment.ms": "60000"}},
		{"validate only changes nothing", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, strptr("1000")))}, true,
			[]*kerr.Error{nil}, nil},
		{"set bad value", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, strptr("soon")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"set unknown key", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("no.such.key", opSet, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"set null", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, nil))}, false,
			[]*kerr.Error{kerr.InvalidRequest}, nil},
		{"append to non-list", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opAppend, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"subtract unknown key", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("no.such.key", opSubtract, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"subtract last policy", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("cleanup.policy", opSubtract, strptr("delete")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"unknown op", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", 9, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidRequest}, nil},
		{"duplicate key", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, strptr("1")), incOp("retention.ms", opDelete, nil))}, false,
			[]*kerr.Error{kerr.InvalidRequest}, nil},
		{"atomic: one bad op fails all", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("retention.ms", opSet, strptr("1")), incOp("segment.ms", opSet, strptr("0")))}, false,
			[]*kerr.Error{kerr.InvalidConfig}, nil},
		{"delete then default", []kmsg.IncrementalAlterConfigsRequestResource{topic("t", incOp("segment.ms", opDelete, nil))}, false,
			[]*kerr.Error{nil}, map[string]string{}},
		{"unknown topic", []kmsg.IncrementalAlterConfigsRequestResource{topic("nope", incOp("retention.ms", opSet, strptr("1")))}, false,
			[]*kerr.Error{kerr.UnknownTopicOrPartition}, nil},
		{"invalid topic name", []kmsg.IncrementalAlterConfigsRequestResource{topic("", incOp("retention.ms", opSet, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidTopicException}, nil},
		{"duplicate resource", []kmsg.IncrementalAlterConfigsRequestResource{
			topic("t", incOp("retention.ms", opSet, strptr("1"))), topic("t", incOp("segment.ms", opSet, strptr("1")))}, false,
			[]*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}, nil},
		{"broker is static", []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}, false,
			[]*kerr.Error{kerr.InvalidRequest}, nil},
		{"broker logger", []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"}}, false,
			[]*kerr.Error{kerr.InvalidRequest}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newAdminBackend()
			original := map[string]string{"segment.ms": "60000"}
			b.addTopic("t", maps.Clone(original), &adminPartition{leader: 1})
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.Resources, req.ValidateOnly = tt.resources, tt.validateOnly
			resp, err := handleIncrementalAlterConfigs(context.Background(), adminServer(b), &request{key: 44, version: 1}, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Resources) != len(tt.want) {
				t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(tt.want))
			}
			for i, res := range resp.Resources {
				code(t, fmt.Sprintf("resource %d", i), res.ErrorCode, tt.want[i])
				if res.ResourceName != tt.resources[i].ResourceName || res.ResourceType != tt.resources[i].ResourceType {
					t.Errorf("resource %d echoed as %d/%q", i, res.ResourceType, res.ResourceName)
				}
				if tt.want[i] != nil && (res.ErrorMessage == nil || *res.ErrorMessage == "") {
					t.Errorf("resource %d: error without a message", i)
				}
			}
			want := tt.wantConfigs
			if want == nil {
				want = original
			}
			if got, _ := b.Topic("t"); !maps.Equal(got.Configs, want) {
				t.Errorf("configs afterwards %v, want %v", got.Configs, want)
			}
		})
	}
}

func TestAlterConfigsReplaces(t *testing.T) {
	b := newAdminBackend()
	b.addTopic("t", map[string]string{"segment.ms": "60000", "retention.ms": "5"}, &adminPartition{leader: 1})
	s := adminServer(b)
	alter := func(rt kmsg.ConfigResourceType, name string, kv ...*string) (int16, *string) {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = rt, name
		for i := 0; i+1 < len(kv); i += 2 {
			res.Configs = append(res.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: *kv[i], Value: kv[i+1]})
		}
		req.Resources = append(req.Resources, res)
		resp, err := handleAlterConfigs(context.Background(), s, &request{key: 33, version: 2}, req)
		if err != nil || len(resp.Resources) != 1 {
			t.Fatalf("resp %v, err %v", resp, err)
		}
		return resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
	}
	topic := kmsg.ConfigResourceTypeTopic
	c, _ := alter(topic, "t", strptr("retention.ms"), strptr("1000"))
	code(t, "replace", c, nil)
	if got, _ := b.Topic("t"); !maps.Equal(got.Configs, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("after replace: %v; segment.ms should have returned to its default", got.Configs)
	}
	c, _ = alter(topic, "t", strptr("retention.ms"), nil)
	code(t, "null value", c, kerr.InvalidConfig)
	c, _ = alter(topic, "t", strptr("retention.ms"), strptr("x"))
	code(t, "bad value", c, kerr.InvalidConfig)
	c, _ = alter(topic, "t", strptr("retention.ms"), strptr("1"), strptr("retention.ms"), strptr("2"))
	code(t, "duplicate key", c, kerr.InvalidRequest)
	if got, _ := b.Topic("t"); !maps.Equal(got.Configs, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("failed alters changed configs: %v", got.Configs)
	}
	c, _ = alter(topic, "missing", strptr("retention.ms"), strptr("1"))
	code(t, "unknown topic", c, kerr.UnknownTopicOrPartition)
	c, msg := alter(kmsg.ConfigResourceTypeBroker, "1", strptr("log.retention.ms"), strptr("1"))
	code(t, "broker", c, kerr.InvalidRequest)
	if msg == nil || !strings.Contains(*msg, "static") {
		t.Errorf("broker alter message %v should say settings are static", msg)
	}
	c, _ = alter(topic, "t")
	code(t, "empty replacement", c, nil)
	if got, _ := b.Topic("t"); len(got.Configs) != 0 {
		t.Errorf("empty replacement left %v", got.Configs)
	}
}

func TestDeleteRecords(t *testing.T) {
	tests := []struct {
		name      string
		leader    int32
		partition int32
		offset    int64
		deleteErr error
		want      *kerr.Error
		wantLow   int64
	}{
		{"-1 means high watermark", 1, 0, -1, nil, nil, 80},
		{"below high watermark", 1, 0, 50, nil, nil, 50},
		{"at high watermark", 1, 0, 80, nil, nil, 80},
		{"below log start keeps it", 1, 0, 5, nil, nil, 10},
		{"above high watermark", 1, 0, 81, nil, kerr.OffsetOutOfRange, -1},
		{"other negative", 1, 0, -2, nil, kerr.OffsetOutOfRange, -1},
		{"not leader", 2, 0, 50, nil, kerr.NotLeaderForPartition, -1},
		{"partition not local", 1, 1, 50, nil, kerr.NotLeaderForPartition, -1},
		{"partition does not exist", 1, 7, 50, nil, kerr.UnknownTopicOrPartition, -1},
		{"storage failure", 1, 0, 50, log.ErrStorage, kerr.KafkaStorageError, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newAdminBackend()
			p := &adminPartition{index: 0, leader: tt.leader, hw: 80, lso: 10, leo: 100, deleteErr: tt.deleteErr}
			topic := b.addTopic("t", nil, p)
			topic.PartitionCount = 2 // partition 1 exists on another agent
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: tt.partition, Offset: tt.offset}}}}
			resp, err := handleDeleteRecords(context.Background(), adminServer(b), &request{key: 21, version: 2}, req)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Topics[0].Partitions[0]
			code(t, "partition", got.ErrorCode, tt.want)
			if got.LowWatermark != tt.wantLow {
				t.Errorf("low watermark %d, want %d", got.LowWatermark, tt.wantLow)
			}
			if tt.want != nil && p.LogStartOffset() != 10 {
				t.Errorf("failed delete moved log start to %d", p.LogStartOffset())
			}
		})
	}
	t.Run("unknown topic", func(t *testing.T) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "nope", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
		resp, err := handleDeleteRecords(context.Background(), adminServer(newAdminBackend()), &request{key: 21, version: 2}, req)
		if err != nil {
			t.Fatal(err)
		}
		code(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	})
}

func describeConfigs(t *testing.T, s *Server, req *kmsg.DescribeConfigsRequest) []kmsg.DescribeConfigsResponseResource {
	t.Helper()
	resp, err := handleDescribeConfigs(context.Background(), s, &request{key: 32, version: 4}, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != len(req.Resources) {
		t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(req.Resources))
	}
	return resp.Resources
}

func TestDescribeConfigsTopic(t *testing.T) {
	b := newAdminBackend()
	b.defaults = metadata.Defaults{"retention.ms": "1000"}
	b.addTopic("t", map[string]string{"segment.ms": "60000"}, &adminPartition{leader: 1})
	s := adminServer(b)

	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	req.Resources = []kmsg.DescribeConfigsRequestResource{res}
	all := describeConfigs(t, s, req)[0]
	code(t, "all", all.ErrorCode, nil)
	if len(all.Configs) != len(metadata.TopicConfigDefs()) {
		t.Errorf("%d configs described, want every one of the %d in the table", len(all.Configs), len(metadata.TopicConfigDefs()))
	}
	byName := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range all.Configs {
		byName[c.Name] = c
		// Only diskless.enable is fixed at creation.
		if c.ReadOnly != (c.Name == metadata.DisklessEnable) || c.IsSensitive || c.Documentation != nil {
			t.Errorf("%s: read-only %v, sensitive %v, documentation %v", c.Name, c.ReadOnly, c.IsSensitive, c.Documentation)
		}
	}
	type syn struct {
		name, value string
		src         kmsg.ConfigSource
	}
	for _, tt := range []struct {
		name  string
		value string
		src   kmsg.ConfigSource
		typ   kmsg.ConfigType
		syns  []syn
	}{
		{"segment.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeLong,
			[]syn{{"segment.ms", "60000", kmsg.ConfigSourceDynamicTopicConfig}, {"log.roll.ms", "604800000", kmsg.ConfigSourceDefaultConfig}}},
		{"retention.ms", "1000", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeLong,
			[]syn{{"log.retention.ms", "1000", kmsg.ConfigSourceStaticBrokerConfig}, {"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig}}},
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeList,
			[]syn{{"log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig}}},
	} {
		c, ok := byName[tt.name]
		if !ok {
			t.Errorf("%s not described", tt.name)
			continue
		}
		if c.Value == nil || *c.Value != tt.value || c.Source != tt.src || c.ConfigType != tt.typ {
			t.Errorf("%s: value %v source %v type %v, want %q %v %v", tt.name, c.Value, c.Source, c.ConfigType, tt.value, tt.src, tt.typ)
		}
		if c.IsDefault != (tt.src == kmsg.ConfigSourceDefaultConfig) {
			t.Errorf("%s: IsDefault %v", tt.name, c.IsDefault)
		}
		var got []syn
		for _, s := range c.ConfigSynonyms {
			got = append(got, syn{s.Name, *s.Value, s.Source})
		}
		if !slices.Equal(got, tt.syns) {
			t.Errorf("%s synonyms %v, want %v", tt.name, got, tt.syns)
		}
	}

	// A filter returns only the named configs (unknown names are dropped),
	// and documentation and synonyms only when asked.
	req.IncludeSynonyms, req.IncludeDocumentation = false, true
	req.Resources[0].ConfigNames = []string{"retention.ms", "no.such.config"}
	filtered := describeConfigs(t, s, req)[0]
	if len(filtered.Configs) != 1 || filtered.Configs[0].Name != "retention.ms" {
		t.Fatalf("filtered configs %+v, want only retention.ms", filtered.Configs)
	}
	if c := filtered.Configs[0]; c.Documentation == nil || *c.Documentation == "" || len(c.ConfigSynonyms) != 0 {
		t.Errorf("documentation %v, synonyms %v", c.Documentation, c.ConfigSynonyms)
	}

	for _, tt := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		want *kerr.Error
	}{
		{kmsg.ConfigResourceTypeTopic, "missing", kerr.UnknownTopicOrPartition},
		{kmsg.ConfigResourceTypeTopic, "bad/name", kerr.InvalidTopicException},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeGroupConfig, "g", kerr.InvalidRequest},
		{kmsg.ConfigResourceTypeUnknown, "x", kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: tt.typ, ResourceName: tt.name}}
		code(t, fmt.Sprintf("type %d %q", tt.typ, tt.name), describeConfigs(t, s, req)[0].ErrorCode, tt.want)
	}
}

func TestDescribeConfigsBroker(t *testing.T) {
	b := newAdminBackend()
	b.agentConfigs = []metadata.ConfigEntry{
		{Name: "log.dirs", Value: "/data", Source: metadata.SourceDefaultAgent, Type: metadata.TypeString, Doc: "where"},
		{Name: "num.partitions", Value: "1", Source: metadata.SourceDefault, Type: metadata.TypeInt},
	}
	s := adminServer(b)
	for _, tt := range []struct {
		name      string
		names     []string
		want      *kerr.Error
		wantCount int
	}{
		{"", nil, nil, 2},
		{"1", nil, nil, 2},
		{"1", []string{"num.partitions"}, nil, 1},
		{"2", nil, kerr.InvalidRequest, 0},
		{"agent", nil, kerr.InvalidRequest, 0},
	} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: tt.name, ConfigNames: tt.names}}
		res := describeConfigs(t, s, req)[0]
		code(t, fmt.Sprintf("broker %q", tt.name), res.ErrorCode, tt.want)
		if len(res.Configs) != tt.wantCount {
			t.Errorf("broker %q: %d configs, want %d", tt.name, len(res.Configs), tt.wantCount)
		}
		for _, c := range res.Configs {
			if !c.ReadOnly || len(c.ConfigSynonyms) != 1 || c.ConfigSynonyms[0].Source != c.Source {
				t.Errorf("broker config %s: read-only %v synonyms %+v", c.Name, c.ReadOnly, c.ConfigSynonyms)
			}
		}
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	// Epochs 2 (from 0), 4 (from 30), 5 (from 70); log end 100.
	epochs := [][2]int64{{2, 0}, {4, 30}, {5, 70}}
	tests := []struct {
		name               string
		leader             int32
		current, requested int32
		want               *kerr.Error
		wantEpoch          int32
		wantEnd            int64
	}{
		{"current epoch ends at log end", 1, 5, 5, nil, 5, 100},
		{"older epoch ends where the next starts", 1, 5, 4, nil, 4, 70},
		{"missing epoch maps to the one below", 1, 5, 3, nil, 2, 30},
		{"before the cache", 1, 5, 1, nil, -1, -1},
		{"no current epoch check", 1, -1, 4, nil, 4, 70},
		{"fenced", 1, 4, 4, kerr.FencedLeaderEpoch, -1, -1},
		{"unknown leader epoch", 1, 6, 4, kerr.UnknownLeaderEpoch, -1, -1},
		{"not leader", 2, 5, 5, kerr.NotLeaderForPartition, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newAdminBackend()
			b.addTopic("t", nil, &adminPartition{leader: tt.leader, epoch: 5, leo: 100, hw: 90, epochs: epochs})
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{
				{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: tt.current, LeaderEpoch: tt.requested}, {Partition: 3}}},
				{Topic: "nope", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0}}},
			}
			resp, err := handleOffsetForLeaderEpoch(context.Background(), adminServer(b), &request{key: 23, version: 4}, req)
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Topics[0].Partitions[0]
			code(t, "partition", got.ErrorCode, tt.want)
			if got.LeaderEpoch != tt.wantEpoch || got.EndOffset != tt.wantEnd {
				t.Errorf("epoch %d end %d, want %d %d", got.LeaderEpoch, got.EndOffset, tt.wantEpoch, tt.wantEnd)
			}
			code(t, "missing partition", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
			code(t, "missing topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		})
	}
}

func TestCreatePartitions(t *testing.T) {
	assign := func(replicas ...[]int32) []kmsg.CreatePartitionsRequestTopicAssignment {
		var out []kmsg.CreatePartitionsRequestTopicAssignment
		for _, r := range replicas {
			out = append(out, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
		}
		return out
	}
	tests := []struct {
		name         string
		topics       []kmsg.CreatePartitionsRequestTopic
		validateOnly bool
		want         []*kerr.Error
		wantCreated  map[string]int32
	}{
		{"grow", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4}}, false, []*kerr.Error{nil}, map[string]int32{"t": 4}},
		{"validate only", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4}}, true, []*kerr.Error{nil}, nil},
		{"same count", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}, false, []*kerr.Error{kerr.InvalidPartitions}, nil},
		{"shrink", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 1}}, false, []*kerr.Error{kerr.InvalidPartitions}, nil},
		{"unknown topic", []kmsg.CreatePartitionsRequestTopic{{Topic: "nope", Count: 4}}, false, []*kerr.Error{kerr.UnknownTopicOrPartition}, nil},
		{"duplicate topic", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4}, {Topic: "t", Count: 5}}, false,
			[]*kerr.Error{kerr.InvalidRequest, kerr.InvalidRequest}, nil},
		{"valid assignment", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4, Assignment: assign([]int32{1}, []int32{2})}}, false,
			[]*kerr.Error{nil}, map[string]int32{"t": 4}},
		{"assignment too short", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 4, Assignment: assign([]int32{1})}}, false,
			[]*kerr.Error{kerr.InvalidReplicaAssignment}, nil},
		{"unknown agent", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3, Assignment: assign([]int32{9})}}, false,
			[]*kerr.Error{kerr.InvalidReplicaAssignment}, nil},
		{"wrong replication factor", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3, Assignment: assign([]int32{1, 2})}}, false,
			[]*kerr.Error{kerr.InvalidReplicaAssignment}, nil},
		{"empty replicas", []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3, Assignment: assign([]int32{})}}, false,
			[]*kerr.Error{kerr.InvalidReplicaAssignment}, nil},
		{"one bad topic does not block another", []kmsg.CreatePartitionsRequestTopic{{Topic: "nope", Count: 3}, {Topic: "t", Count: 3}}, false,
			[]*kerr.Error{kerr.UnknownTopicOrPartition, nil}, map[string]int32{"t": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newAdminBackend()
			b.addTopic("t", nil, &adminPartition{index: 0, leader: 1}, &adminPartition{index: 1, leader: 1})
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Topics, req.ValidateOnly = tt.topics, tt.validateOnly
			resp, err := handleCreatePartitions(context.Background(), adminServer(b), &request{key: 37, version: 3}, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != len(tt.want) {
				t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(tt.want))
			}
			for i, rt := range resp.Topics {
				code(t, rt.Topic, rt.ErrorCode, tt.want[i])
			}
			want := tt.wantCreated
			if want == nil {
				want = map[string]int32{}
			}
			if !maps.Equal(b.createdPartitions, want) {
				t.Errorf("created %v, want %v", b.createdPartitions, want)
			}
		})
	}
}

func TestDescribeCluster(t *testing.T) {
	b := newAdminBackend()
	s := adminServer(b)
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := handleDescribeCluster(context.Background(), s, &request{key: 60, version: 1}, req)
	if err != nil {
		t.Fatal(err)
	}
	code(t, "brokers", resp.ErrorCode, nil)
	if resp.ClusterID != "test-cluster" || resp.ControllerID != 1 || len(resp.Brokers) != 2 || resp.Brokers[1].Port != 9093 {
		t.Errorf("response %+v", resp)
	}
	if resp.ClusterAuthorizedOperations != -2147483648 {
		t.Errorf("authorized operations %d when not requested", resp.ClusterAuthorizedOperations)
	}
	req.IncludeClusterAuthorizedOperations = true
	resp, _ = handleDescribeCluster(context.Background(), s, &request{key: 60, version: 1}, req)
	if ops := resp.ClusterAuthorizedOperations; ops <= 0 || ops&(1<<8) == 0 || ops&(1<<12) == 0 {
		t.Errorf("authorized operations %b should include DESCRIBE and IDEMPOTENT_WRITE", ops)
	}
	req.EndpointType = 2
	resp, _ = handleDescribeCluster(context.Background(), s, &request{key: 60, version: 1}, req)
	code(t, "controllers", resp.ErrorCode, kerr.UnsupportedEndpointType)
	// v0 has no EndpointType on the wire; the field's value is not looked at.
	resp, _ = handleDescribeCluster(context.Background(), s, &request{key: 60, version: 0}, req)
	code(t, "v0", resp.ErrorCode, nil)
}

func TestDescribeLogDirs(t *testing.T) {
	b := newAdminBackend()
	b.dataDir = t.TempDir()
	b.addTopic("a", nil, &adminPartition{index: 0, leader: 1, size: 100}, &adminPartition{index: 1, leader: 2, size: 200})
	b.addTopic("b", nil, &adminPartition{index: 0, leader: 1, size: 5})
	b.addTopic("empty", nil)
	s := adminServer(b)
	sizes := func(req *kmsg.DescribeLogDirsRequest) map[string]int64 {
		t.Helper()
		resp, err := handleDescribeLogDirs(context.Background(), s, &request{key: 35, version: 4}, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != b.dataDir {
			t.Fatalf("dirs %+v, want exactly %s", resp.Dirs, b.dataDir)
		}
		d := resp.Dirs[0]
		if d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes {
			t.Errorf("total %d usable %d", d.TotalBytes, d.UsableBytes)
		}
		out := map[string]int64{}
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				out[fmt.Sprintf("%s-%d", dt.Topic, dp.Partition)] = dp.Size
				if dp.OffsetLag != 0 || dp.IsFuture {
					t.Errorf("%s-%d: lag %d future %v", dt.Topic, dp.Partition, dp.OffsetLag, dp.IsFuture)
				}
			}
		}
		return out
	}
	all := sizes(kmsg.NewPtrDescribeLogDirsRequest())
	if want := map[string]int64{"a-0": 100, "a-1": 200, "b-0": 5}; !maps.Equal(all, want) {
		t.Errorf("null topics: %v, want %v", all, want)
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "a", Partitions: []int32{1, 9}}, {Topic: "nope", Partitions: []int32{0}}}
	if got, want := sizes(req), map[string]int64{"a-1": 200}; !maps.Equal(got, want) {
		t.Errorf("filtered: %v, want %v", got, want)
	}
	if total, usable := diskSpace(filepath.Join(b.dataDir, "missing")); total != -1 || usable != -1 {
		t.Errorf("missing dir: %d %d, want -1 -1", total, usable)
	}
}

// TestAdminHandlersEveryVersion runs each admin key at every served version
// through the request parser, dispatch and the response encoder, and decodes
// the answer as a client would, so a field used outside its versions or a
// registration that disagrees with kmsg fails here.
func TestAdminHandlersEveryVersion(t *testing.T) {
	b := newAdminBackend()
	b.dataDir = t.TempDir()
	b.addTopic("t", map[string]string{"retention.ms": "1000"}, &adminPartition{leader: 1, epoch: 3, hw: 10, leo: 10, size: 7, epochs: [][2]int64{{3, 0}}})
	s := adminServer(b)
	for _, key := range []int16{21, 23, 32, 33, 35, 37, 44, 60} {
		a, ok := apis[key]
		if !ok {
			t.Fatalf("key %d not registered", key)
		}
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			frame := kafkawire.AppendRequest(nil, req, 7, "test")[4:] // after the size
			r, err := parseRequest(frame, DefaultMaxTopicsPerRequest)
			if err != nil {
				t.Fatalf("key %d v%d: parse: %v", key, v, err)
			}
			resp, err := s.dispatch(context.Background(), r)
			if err != nil || resp == nil {
				t.Fatalf("key %d v%d: dispatch: %v, %v", key, v, resp, err)
			}
			resp.SetVersion(v)
			decoded := req.ResponseKind()
			decoded.SetVersion(v)
			if err := decoded.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Errorf("key %d v%d: response does not decode: %v", key, v, err)
			}
		}
	}
}
