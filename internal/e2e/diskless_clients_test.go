package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// The diskless topic the clients share, and how many records each
// produces.
const (
	disklessClientsTopic      = "diskless-clients"
	disklessClientsPartitions = 3
	disklessClientRecords     = 50
)

// disklessRecord is one record as a client handed it to the application.
type disklessRecord struct {
	partition  int32
	offset     int64
	key, value string
}

func (r disklessRecord) String() string {
	return fmt.Sprintf("%d/%d %s=%s", r.partition, r.offset, r.key, r.value)
}

// disklessClient produces n records of prefix with acks=all, failing t
// unless each is acknowledged, and reads total records of the topic from
// the start in group, in the order it hands them out.
type disklessClient struct {
	name string
	run  func(t *testing.T, addr, topic, group, prefix string, n, total int) []disklessRecord
}

// TestDisklessClients (issue 34): every client Strata supports, each with
// its own defaults but acks=all, produces to one diskless topic and reads
// it back, unmodified. The clients take turns on one agent; each produces
// disklessClientRecords records of its own ("<name>-key-<i>",
// "<name>-value-<i>", keyed so they spread over the partitions) and must
// have every one acknowledged, then reads the whole topic from the start
// (a fresh group, or every partition from offset 0): every record that
// the clients before it and it produced, once each, at offsets that run
// from 0 without a gap in each partition. A franz-go read of the whole
// topic then finds every produced record once, in every partition, and
// each client's reads at the same partition and offset; nothing of the
// topic is on the agent's disk, its batches went to the bucket in commit
// objects, and every commit succeeded.
func TestDisklessClients(t *testing.T) {
	kcat := kcatPath(t)
	clients := []disklessClient{
		{"franz-go", kgoDiskless},
		{"sarama", saramaDiskless},
		{"kafka-go", kafkaGoDiskless},
		{"kcat", kcatDiskless(kcat, nil)},
		// librdkafka's idempotent producer, which kcat leaves off by default.
		{"kcat-idempotent", kcatDiskless(kcat, []string{"-X", "enable.idempotence=true"})},
		scriptDisklessClient(confluentKafkaPython(t)),
		scriptDisklessClient(kafkaPython(t)),
		scriptDisklessClient(kafkajs(t)),
	}
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{
		"--diskless-commit-interval=20ms", "--group-initial-rebalance-delay=100ms"}})
	addr, topic := a.Addr(), disklessClientsTopic
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, disklessClientsPartitions, map[string]*string{"diskless.enable": kadm.StringPtr("true")})
	checkDisklessConfig(t, adm, topic)

	reads := map[string][]disklessRecord{}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			// Read from the topic rather than counted: a client that
			// failed before leaves what it wrote, and the next is not
			// failed for it.
			total := topicSize(t, adm, topic) + disklessClientRecords
			got := c.run(t, addr, topic, "diskless-"+c.name, c.name+"-", disklessClientRecords, total)
			reads[c.name] = got
			checkDisklessRead(t, c.name, got, total)
			for i := range disklessClientRecords {
				if v := fmt.Sprintf("%s-value-%d", c.name, i); !containsValue(got, v) {
					t.Fatalf("%s did not read back its own acknowledged record %s", c.name, v)
				}
			}
		})
	}

	// franz-go's direct read of every partition, to the end offsets.
	var ref []disklessRecord
	for p, rs := range consumeKgo(t, addr, topic) {
		for _, r := range rs {
			ref = append(ref, disklessRecord{p, r.Offset, string(r.Key), string(r.Value)})
		}
	}
	checkDisklessRead(t, "the reference read", ref, len(clients)*disklessClientRecords)
	at := map[string]disklessRecord{}
	partitions := map[int32]bool{}
	for _, r := range ref {
		at[r.value] = r
		partitions[r.partition] = true
	}
	if len(partitions) != disklessClientsPartitions {
		t.Errorf("records in %d of the %d partitions", len(partitions), disklessClientsPartitions)
	}
	for _, c := range clients {
		for i := range disklessClientRecords {
			if v := fmt.Sprintf("%s-value-%d", c.name, i); !containsValue(ref, v) {
				t.Errorf("%s's record %s is not in the topic", c.name, v)
			}
		}
		for _, r := range reads[c.name] {
			if r != at[r.value] {
				t.Errorf("%s read %v; the reference read has it at %v", c.name, r, at[r.value])
			}
		}
	}
	checkDisklessStorage(t, a, topic)
}

// checkDisklessConfig fails unless DescribeConfigs lists diskless.enable=true.
func checkDisklessConfig(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == "diskless.enable" {
			if c.MaybeValue() != "true" {
				t.Fatalf("%s: diskless.enable=%s, want true", topic, c.MaybeValue())
			}
			return
		}
	}
	t.Fatalf("%s: DescribeConfigs lists no diskless.enable", topic)
}

// topicSize is the sum of topic's end offsets.
func topicSize(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctxT(t, opTimeout), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	n := 0
	ends.Each(func(o kadm.ListedOffset) { n += int(o.Offset) })
	return n
}

// checkDisklessRead fails unless got is total records, none twice, each
// with the key of its value, at offsets that run from 0 without a gap in
// each partition.
func checkDisklessRead(t *testing.T, who string, got []disklessRecord, total int) {
	t.Helper()
	next := map[int32]int64{}
	seen := map[string]bool{}
	for _, r := range got {
		if r.offset != next[r.partition] {
			t.Fatalf("%s: partition %d: offset %d after %d records (%v)", who, r.partition, r.offset, next[r.partition], r)
		}
		next[r.partition]++
		if seen[r.value] {
			t.Fatalf("%s: %s read twice", who, r.value)
		}
		seen[r.value] = true
		if i := strings.LastIndex(r.value, "value-"); i < 0 || r.key != r.value[:i]+"key-"+r.value[i+len("value-"):] {
			t.Fatalf("%s: record %v has another record's key", who, r)
		}
	}
	if len(got) != total {
		t.Fatalf("%s: read %d records (per partition %v), want %d", who, len(got), next, total)
	}
}

func containsValue(rs []disklessRecord, v string) bool {
	for _, r := range rs {
		if r.value == v {
			return true
		}
	}
	return false
}

// checkDisklessStorage fails unless the topic's batches went to the
// bucket in commit objects, every one committed, and none of it is on the
// agent's disk or was copied to a replica. With one agent nothing would
// be copied of a classic topic either: the log directories, the bucket
// and the commit counts are what tell the diskless path apart here.
func checkDisklessStorage(t *testing.T, a *testagent.Agent, topic string) {
	t.Helper()
	if dirs, _ := filepath.Glob(filepath.Join(a.DataDir(), "log", topic+"-*")); len(dirs) > 0 {
		t.Errorf("the diskless topic has partition logs on the agent's disk: %v", dirs)
	}
	objects, err := os.ReadDir(filepath.Join(a.DataDir(), "store", sharedobj.KeyPrefix))
	if err != nil || len(objects) == 0 {
		t.Errorf("no commit object in the bucket: %v", err)
	}
	m, err := metricstext.Scrape(ctxT(t, opTimeout), "http://"+a.HTTPAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Value("strata_replica_copied_bytes_total", "topic", topic); v != 0 {
		t.Errorf("the agent copied %v bytes of the diskless topic", v)
	}
	if v, _ := m.Value("strata_diskless_commits_total", "outcome", "committed"); v == 0 {
		t.Errorf("strata_diskless_commits_total{outcome=committed} is 0")
	}
	for _, o := range []string{"duplicate", "refused", "timed_out", "failed", "dropped"} {
		if v, _ := m.Value("strata_diskless_commits_total", "outcome", o); v != 0 {
			t.Errorf("strata_diskless_commits_total{outcome=%s} is %v, want 0", o, v)
		}
	}
}

// disklessKeyValue is the key and value of record i of prefix.
func disklessKeyValue(prefix string, i int) (key, value string) {
	return fmt.Sprintf("%skey-%d", prefix, i), fmt.Sprintf("%svalue-%d", prefix, i)
}

// kgoDiskless: franz-go's defaults (idempotent, acks=all, sticky key
// partitioner) but gzip, which every client reads (kafkajs and Debian's
// kafka-python lack snappy, franz-go's default), and a group consumer.
func kgoDiskless(t *testing.T, addr, topic, group, prefix string, n, total int) []disklessRecord {
	cl := newKgo(t, addr, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	var recs []*kgo.Record
	for i := range n {
		k, v := disklessKeyValue(prefix, i)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
	}
	for _, r := range cl.ProduceSync(ctxT(t, opTimeout), recs...) {
		if r.Err != nil {
			t.Fatalf("franz-go produce %s: %v", r.Record.Value, r.Err)
		}
	}
	cons := newKgo(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []disklessRecord
	ctx := ctxT(t, opTimeout)
	for len(out) < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go read %d of %d records", len(out), total)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("franz-go fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, disklessRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)})
		})
	}
	return out
}

// saramaDiskless: sarama's SyncProducer with its hash partitioner and
// acks=all (saramaConfig), and its partition Consumer from the oldest
// offset of each partition to the newest its client lists.
func saramaDiskless(t *testing.T, addr, topic, _, prefix string, n, total int) []disklessRecord {
	cfg := saramaConfig()
	cfg.Producer.Partitioner = sarama.NewHashPartitioner // sarama's default
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama client: %v", err)
	}
	defer client.Close()
	prod, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	var msgs []*sarama.ProducerMessage
	for i := range n {
		k, v := disklessKeyValue(prefix, i)
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder(v)})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("sarama produce: %v", err)
	}
	if err := prod.Close(); err != nil {
		t.Fatalf("sarama producer close: %v", err)
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	partitions, err := client.Partitions(topic)
	if err != nil {
		t.Fatalf("sarama partitions: %v", err)
	}
	var out []disklessRecord
	for _, p := range partitions {
		newest, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("sarama newest offset of partition %d: %v", p, err)
		}
		if newest == 0 {
			continue
		}
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume partition %d: %v", p, err)
		}
		for last := int64(-1); last < newest-1; {
			select {
			case m := <-pc.Messages():
				last = m.Offset
				out = append(out, disklessRecord{m.Partition, m.Offset, string(m.Key), string(m.Value)})
			case err := <-pc.Errors():
				t.Fatalf("sarama partition %d: %v", p, err)
			case <-time.After(opTimeout):
				t.Fatalf("sarama partition %d: at offset %d, newest %d, nothing within %v", p, last, newest, opTimeout)
			}
		}
		pc.Close()
	}
	return out
}

// kafkaGoDiskless: segmentio/kafka-go's Writer (its round-robin balancer;
// acks=all is not its default and is set) and its group Reader.
func kafkaGoDiskless(t *testing.T, addr, topic, group, prefix string, n, total int) []disklessRecord {
	transport := &kafkago.Transport{}
	defer transport.CloseIdleConnections()
	w := &kafkago.Writer{Transport: transport, Addr: kafkago.TCP(addr), Topic: topic, RequiredAcks: kafkago.RequireAll}
	var msgs []kafkago.Message
	for i := range n {
		k, v := disklessKeyValue(prefix, i)
		msgs = append(msgs, kafkago.Message{Key: []byte(k), Value: []byte(v)})
	}
	if err := w.WriteMessages(ctxT(t, opTimeout), msgs...); err != nil {
		t.Fatalf("kafka-go produce: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("kafka-go writer close: %v", err)
	}
	// MaxWait short of its 10 s default, which Close waits out.
	rd := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: group, Topic: topic,
		StartOffset: kafkago.FirstOffset, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	var out []disklessRecord
	ctx := ctxT(t, opTimeout)
	for len(out) < total {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read %d of %d records: %v", len(out), total, err)
		}
		out = append(out, disklessRecord{int32(m.Partition), m.Offset, string(m.Key), string(m.Value)})
	}
	return out
}

// kcatDiskless: kcat produces "key:value" lines with librdkafka's
// partitioner (no -p) and acks=all, then reads every partition from the
// beginning to its end (-e).
func kcatDiskless(kcat string, extra []string) func(t *testing.T, addr, topic, group, prefix string, n, total int) []disklessRecord {
	return func(t *testing.T, addr, topic, _, prefix string, n, total int) []disklessRecord {
		var in bytes.Buffer
		for i := range n {
			k, v := disklessKeyValue(prefix, i)
			fmt.Fprintf(&in, "%s:%s\n", k, v)
		}
		// kcat exits non-zero when a record's delivery fails.
		runKcat(t, kcat, in.Bytes(), append([]string{"-P", "-b", addr, "-t", topic, "-K:", "-X", "acks=all"}, extra...)...)
		out := runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %k %s\n")
		return parseDisklessLines(t, "kcat", string(out))
	}
}

// scriptDisklessClient runs a client script of testdata in mode
// "diskless".
func scriptDisklessClient(lib clientLibrary) disklessClient {
	return disklessClient{name: lib.name, run: func(t *testing.T, addr, topic, group, prefix string, n, total int) []disklessRecord {
		stdout, stderr, ok := lib.run(t, clientRun{Bootstrap: addr, Security: "PLAINTEXT", Mode: "diskless", Topic: topic,
			Group: group, Prefix: prefix, Count: n, Total: total})
		if !ok {
			t.Fatalf("%s failed:\n%s", lib.name, stderr)
		}
		return parseDisklessLines(t, lib.name, stdout)
	}}
}

// parseDisklessLines reads "<partition> <offset> <key> <value>" lines.
func parseDisklessLines(t *testing.T, who, out string) []disklessRecord {
	t.Helper()
	var rs []disklessRecord
	for _, l := range kcatLines([]byte(out)) {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("%s printed %q, not <partition> <offset> <key> <value>", who, l)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s printed %q, not <partition> <offset> <key> <value>", who, l)
		}
		rs = append(rs, disklessRecord{int32(p), o, f[2], f[3]})
	}
	return rs
}
