package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestKafkaGo: segmentio/kafka-go's Writer (acks=all, keyed balancer, every
// codec) and its group-less Reader.
func TestKafkaGo(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	for _, c := range []struct {
		name  string
		codec kafka.Compression
	}{
		{"none", 0},
		{"gzip", kafka.Gzip},
		{"snappy", kafka.Snappy},
		{"lz4", kafka.Lz4},
		{"zstd", kafka.Zstd},
	} {
		t.Run(c.name, func(t *testing.T) { kafkaGoProduceConsume(t, a.Addr(), c.name, c.codec) })
	}
}

// kafkaGoPartition is the balancer: the key names its partition
// ("<p>/..."), so the test knows where every record must land.
var kafkaGoPartition = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
	p, err := strconv.Atoi(strings.SplitN(string(m.Key), "/", 2)[0])
	if err != nil || p >= len(partitions) {
		return partitions[0]
	}
	return partitions[p]
})

func kafkaGoProduceConsume(t *testing.T, addr, name string, codec kafka.Compression) {
	topic := "kafkago-" + name
	const partitions, perPartition, chunk = 2, 300, 100
	createTopic(t, newAdmin(t, addr), topic, partitions, nil)
	base := time.UnixMilli(time.Now().UnixMilli() - 10_000)
	want := map[int32][]rec{}
	for p := int32(0); p < partitions; p++ {
		rs := testRecords("kafkago-"+name, p, perPartition, base)
		for i := range rs {
			// kafka-go cannot tell a null key from an empty one; every key
			// carries the partition anyway.
			rs[i].Key = []byte(fmt.Sprintf("%d/%s", p, rs[i].Key))
		}
		want[p] = rs
	}
	// A transport of its own: the shared default one caches metadata for
	// seconds and would not yet know the topic just created.
	transport := &kafka.Transport{MetadataTTL: time.Second}
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{
		Transport:    transport,
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		Balancer:     kafkaGoPartition,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    chunk,
		BatchTimeout: 10 * time.Millisecond,
		MaxAttempts:  5,
		ReadTimeout:  opTimeout,
		WriteTimeout: opTimeout,
	}
	defer w.Close()
	// Sequential WriteMessages calls keep the per-partition order.
	for i := 0; i < perPartition; i += chunk {
		var msgs []kafka.Message
		for j := i; j < i+chunk; j++ {
			for p := int32(0); p < partitions; p++ {
				msgs = append(msgs, kafkaGoMessage(want[p][j]))
			}
		}
		if err := w.WriteMessages(ctxT(t, opTimeout), msgs...); err != nil {
			t.Fatalf("write messages %d..: %v", i, err)
		}
	}
	for p := int32(0); p < partitions; p++ {
		got := kafkaGoRead(t, addr, topic, int(p), len(want[p]))
		if d := sameRecords(loose(want[p]), loose(got)); d != "" {
			t.Errorf("partition %d: %s", p, d)
		}
	}
}

func kafkaGoMessage(r rec) kafka.Message {
	m := kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	return m
}

// kafkaGoRead reads n messages of one partition from the first offset with
// a group-less Reader.
func kafkaGoRead(t *testing.T, addr, topic string, p, n int) []rec {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   []string{addr},
		Topic:     topic,
		Partition: p,
		MinBytes:  1,
		MaxBytes:  10 << 20,
		MaxWait:   500 * time.Millisecond,
	})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatalf("set offset: %v", err)
	}
	ctx := ctxT(t, opTimeout)
	var out []rec
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("partition %d: read message %d of %d: %v", p, len(out), n, err)
		}
		if m.Offset != int64(len(out)) {
			t.Fatalf("partition %d: message %d has offset %d", p, len(out), m.Offset)
		}
		g := rec{Key: m.Key, Value: m.Value, Timestamp: m.Time}
		for _, h := range m.Headers {
			g.Headers = append(g.Headers, hdr{h.Key, string(h.Value)})
		}
		out = append(out, g)
	}
	return out
}

// loose maps null keys and values to empty ones, for clients that do not
// keep the difference.
func loose(rs []rec) []rec {
	out := make([]rec, len(rs))
	for i, r := range rs {
		if r.Key == nil {
			r.Key = []byte{}
		}
		if r.Value == nil {
			r.Value = []byte{}
		}
		out[i] = r
	}
	return out
}
