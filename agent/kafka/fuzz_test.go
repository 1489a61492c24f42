package kafka

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/kafkawire"
)

// FuzzHandleRequest feeds arbitrary frames through the whole request path a
// connection uses: header and body decoding, dispatch to the handler, and
// response encoding. Nothing may panic, whatever the bytes. The backend is
// the in-memory one of the admin tests, with one topic, so Produce reaches
// batch validation and Fetch, ListOffsets and the admin keys reach their
// partition logic; the families it does not model (groups, producer ids,
// reassignments) are unset and answer errors (unset.go).
func FuzzHandleRequest(f *testing.F) {
	for _, seed := range seedRequests(f) {
		f.Add(seed)
	}
	b := newAdminBackend()
	b.addTopic("t", nil, &adminPartition{index: 0, leader: 1, hw: 5, leo: 5, epochs: [][2]int64{{0, 0}}})
	cfg := DefaultConfig()
	cfg.MaxFetchWait = time.Millisecond // the fake backend never signals data
	s := New(cfg, Backends{Cluster: b, Topics: b, TopicAdmin: b}, nil, nil)
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := parseRequest(frame, cfg.MaxTopicsPerRequest)
		if err != nil {
			return // the connection would close; nothing else to check
		}
		// Short, so that no input can hold a worker when fuzzing stops.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		resp, err := s.dispatch(ctx, req)
		if err != nil || resp == nil {
			return
		}
		if err := writeResponse(io.Discard, req, resp); err != nil {
			t.Fatalf("encode response to key %d v%d: %v", req.key, req.version, err)
		}
	})
}

// seedRequests encodes one valid request of several keys, at their highest
// served version, as frame bodies (without the size prefix).
func seedRequests(f testing.TB) [][]byte {
	rec, err := batch.Build(batch.DefaultBuildOptions(), []batch.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		f.Fatal(err)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks = 9, -1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = rec
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 12, 1, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	metadata.Topics = append(metadata.Topics, mt)

	list := kmsg.NewPtrListOffsetsRequest()
	list.Version = 7
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)

	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Version = 4
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	describe.Resources = append(describe.Resources, dr)

	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epochs.Version = 4
	et := kmsg.NewOffsetForLeaderEpochRequestTopic()
	et.Topic = "t"
	ep := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	ep.CurrentLeaderEpoch, ep.LeaderEpoch = -1, 0
	et.Partitions = append(et.Partitions, ep)
	epochs.Topics = append(epochs.Topics, et)

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.Version = 3
	versions.ClientSoftwareName, versions.ClientSoftwareVersion = "fuzz", "1"

	quotas := kmsg.NewPtrDescribeClientQuotasRequest()
	quotas.Version = 1
	qc := kmsg.NewDescribeClientQuotasRequestComponent()
	qc.EntityType, qc.MatchType = "user", 2
	quotas.Components = append(quotas.Components, qc)

	alterQuotas := kmsg.NewPtrAlterClientQuotasRequest()
	alterQuotas.Version, alterQuotas.ValidateOnly = 1, true
	qe := kmsg.NewAlterClientQuotasRequestEntry()
	qe.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}}
	qe.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
	alterQuotas.Entries = append(alterQuotas.Entries, qe)

	var out [][]byte
	for _, r := range []kmsg.Request{produce, fetch, metadata, list, describe, epochs, versions, quotas, alterQuotas} {
		out = append(out, encodeRequest(r))
	}
	return out
}

// encodeRequest writes the request header (v1, or v2 for flexible versions)
// and body, as a client sends them after the size.
func encodeRequest(r kmsg.Request) []byte {
	return kafkawire.AppendRequest(nil, r, 7, "fuzz")[4:]
}

// TestFuzzSeedsReachHandlers keeps the fuzz seeds honest: each must decode
// and be answered, or the fuzzer would start from bytes the handlers never
// see.
func TestFuzzSeedsReachHandlers(t *testing.T) {
	b := newAdminBackend()
	b.addTopic("t", nil, &adminPartition{index: 0, leader: 1, hw: 5, leo: 5})
	cfg := DefaultConfig()
	cfg.MaxFetchWait = time.Millisecond
	s := New(cfg, Backends{Cluster: b, Topics: b, TopicAdmin: b}, nil, nil)
	for i, seed := range seedRequests(t) {
		req, err := parseRequest(seed, DefaultMaxTopicsPerRequest)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		resp, err := s.dispatch(context.Background(), req)
		if err != nil || resp == nil {
			t.Fatalf("seed %d (key %d): response %v, error %v", i, req.key, resp, err)
		}
	}
}
