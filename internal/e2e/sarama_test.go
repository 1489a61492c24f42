package e2e

import (
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/strata-streaming/strata/internal/testagent"
)

// saramaVersion is the protocol level sarama is told the cluster speaks; it
// decides which request versions sarama sends.
var saramaVersion = sarama.V3_6_0_0

// TestSarama: IBM/sarama's SyncProducer (acks=all, headers, every codec) and
// plain partition Consumer, plus its ClusterAdmin for topic creation.
func TestSarama(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	t.Run("Admin", func(t *testing.T) { saramaAdmin(t, a.Addr()) })
	for _, c := range []struct {
		name  string
		codec sarama.CompressionCodec
	}{
		{"none", sarama.CompressionNone},
		{"gzip", sarama.CompressionGZIP},
		{"snappy", sarama.CompressionSnappy},
		{"lz4", sarama.CompressionLZ4},
		{"zstd", sarama.CompressionZSTD},
	} {
		t.Run("ProduceConsume/"+c.name, func(t *testing.T) { saramaProduceConsume(t, a.Addr(), c.name, c.codec) })
	}
	t.Run("Idempotent", func(t *testing.T) { saramaIdempotent(t, a.Addr()) })
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "strata-e2e-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max = 5
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.Retry.Max = 5
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Net.ReadTimeout = opTimeout
	cfg.Net.WriteTimeout = opTimeout
	return cfg
}

func saramaAdmin(t *testing.T, addr string) {
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer adm.Close()
	const topic = "sarama-admin"
	retention := "3600000"
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	mds, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("describe topics: %v", err)
	}
	if len(mds) != 1 || mds[0].Err != sarama.ErrNoError || len(mds[0].Partitions) != 3 {
		t.Fatalf("describe topics: %+v", mds)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("describe config: %v", err)
	}
	found := false
	for _, e := range entries {
		if e.Name == "retention.ms" {
			found = true
			if e.Value != retention {
				t.Errorf("retention.ms = %q, want %q", e.Value, retention)
			}
		}
	}
	if !found {
		t.Errorf("describe config lacks retention.ms")
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 {
		t.Errorf("list topics: %s = %+v (present %v)", topic, d, ok)
	}
	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
}

func saramaProduceConsume(t *testing.T, addr, name string, codec sarama.CompressionCodec) {
	topic := "sarama-" + name
	const partitions, perPartition = 2, 300
	createTopic(t, newAdmin(t, addr), topic, partitions, nil)
	cfg := saramaConfig()
	cfg.Producer.Compression = codec
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sync producer: %v", err)
	}
	defer prod.Close()

	base := time.UnixMilli(time.Now().UnixMilli() - 10_000)
	want := map[int32][]rec{}
	for p := int32(0); p < partitions; p++ {
		want[p] = testRecords("sarama-"+name, p, perPartition, base)
	}
	// The first 10 per partition one by one (SendMessage), the rest in one
	// SendMessages call, which sarama batches.
	for i := 0; i < 10; i++ {
		for p := int32(0); p < partitions; p++ {
			gp, off, err := prod.SendMessage(saramaMessage(topic, p, want[p][i]))
			if err != nil {
				t.Fatalf("send %d to %d: %v", i, p, err)
			}
			if gp != p || off != int64(i) {
				t.Fatalf("send %d: landed at %d/%d, want %d/%d", i, gp, off, p, i)
			}
		}
	}
	var msgs []*sarama.ProducerMessage
	for i := 10; i < perPartition; i++ {
		for p := int32(0); p < partitions; p++ {
			msgs = append(msgs, saramaMessage(topic, p, want[p][i]))
		}
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("send messages: %v", err)
	}

	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	for p := int32(0); p < partitions; p++ {
		got := saramaConsume(t, cons, topic, p, len(want[p]))
		if d := sameRecords(want[p], got); d != "" {
			t.Errorf("partition %d: %s", p, d)
		}
	}
	// And franz-go reads the same bytes.
	for p, krs := range consumeKgo(t, addr, topic) {
		var got []rec
		for _, kr := range krs {
			got = append(got, fromKgo(kr, true))
		}
		if d := sameRecords(want[p], got); d != "" {
			t.Errorf("franz-go reading sarama's partition %d: %s", p, d)
		}
	}
}

// saramaIdempotent: sarama's idempotent producer (InitProducerId, one
// request in flight) writes and the records come back once each.
func saramaIdempotent(t *testing.T, addr string) {
	const topic = "sarama-idempotent"
	createTopic(t, newAdmin(t, addr), topic, 1, nil)
	cfg := saramaConfig()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("idempotent producer: %v", err)
	}
	defer prod.Close()
	want := testRecords("sarama-idem", 0, 200, time.UnixMilli(time.Now().UnixMilli()))
	var msgs []*sarama.ProducerMessage
	for _, r := range want {
		msgs = append(msgs, saramaMessage(topic, 0, r))
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("send: %v", err)
	}
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	if d := sameRecords(want, saramaConsume(t, cons, topic, 0, len(want))); d != "" {
		t.Error(d)
	}
}

func saramaMessage(topic string, p int32, r rec) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Partition: p, Timestamp: r.Timestamp}
	if r.Key != nil {
		m.Key = sarama.ByteEncoder(r.Key)
	}
	if r.Value != nil {
		m.Value = sarama.ByteEncoder(r.Value)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: []byte(h.Value)})
	}
	return m
}

// saramaConsume reads n messages of one partition from the oldest offset.
func saramaConsume(t *testing.T, cons sarama.Consumer, topic string, p int32, n int) []rec {
	t.Helper()
	pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume partition %d: %v", p, err)
	}
	defer pc.Close()
	deadline := time.NewTimer(opTimeout)
	defer deadline.Stop()
	var out []rec
	for len(out) < n {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(len(out)) {
				t.Fatalf("partition %d: message %d has offset %d", p, len(out), m.Offset)
			}
			r := rec{Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
			for _, h := range m.Headers {
				r.Headers = append(r.Headers, hdr{string(h.Key), string(h.Value)})
			}
			out = append(out, r)
		case err := <-pc.Errors():
			t.Fatalf("partition %d: %v", p, err)
		case <-deadline.C:
			t.Fatalf("partition %d: %d of %d messages within %v", p, len(out), n, opTimeout)
		}
	}
	return out
}
