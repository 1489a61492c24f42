package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// disklessCluster is three agents with a short commit interval.
func disklessCluster(t *testing.T) *cluster {
	t.Helper()
	return startClusterWith(t, 3, func(cfg *Config) {
		cfg.Diskless.Writer.CommitInterval = 20 * time.Millisecond
	})
}

// TestDisklessProduceConsumeAcrossAgents: records produced through one
// agent are committed by the batch coordinators, wherever they run, and
// read through another agent, every offset once and in order; the
// objects are in the bucket and no agent copied a byte of the topic.
func TestDisklessProduceConsumeAcrossAgents(t *testing.T) {
	c := disklessCluster(t)
	const topic, partitions, n = "dl", 4, 400
	c.create(topic, partitions, 1, map[string]string{metadata.DisklessEnable: "true"})

	prod := c.agents[0].client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range n {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	cons := c.agents[2].client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := map[int32]int64{}
	seen := map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		fs := cons.PollRecords(ctxT(t), 1000)
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			if seen[string(r.Value)] {
				t.Fatalf("%s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	if len(seen) != n {
		t.Fatalf("read %d of %d records", len(seen), n)
	}

	objects, err := os.ReadDir(filepath.Join(c.dir, "store", sharedobj.KeyPrefix))
	if err != nil || len(objects) == 0 {
		t.Fatalf("no commit object in the bucket: %v", err)
	}
	var coordinated, indexBytes float64
	for i, a := range c.agents {
		m, err := metricstext.Scrape(ctxT(t), "http://"+a.HTTPAddr().String()+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := m.Value("strata_replica_copied_bytes_total", "topic", topic); v != 0 {
			t.Fatalf("agent %d copied %v bytes of the diskless topic", i, v)
		}
		v, _ := m.Value("strata_diskless_coordinator_partitions")
		coordinated += v
		v, _ = m.Value("strata_diskless_coordinator_index_bytes")
		indexBytes += v
	}
	if coordinated != partitions || indexBytes <= 0 {
		t.Fatalf("the agents' coordinators hold %v partitions in %v bytes of index, want %d partitions", coordinated, indexBytes, partitions)
	}
}

// TestDisklessIdempotentRetryThroughAnotherAgent: a producer whose batch
// was committed sends it again through another agent, as after a lost
// answer; the coordinator answers with the first offset and nothing is
// added.
func TestDisklessIdempotentRetryThroughAnotherAgent(t *testing.T) {
	c := disklessCluster(t)
	c.create("dli", 1, 1, map[string]string{metadata.DisklessEnable: "true"})
	raw := idempotentBatch(t, 42, 0, 0, "once")
	first := produceBatchTo(t, c.agents[0], "dli", raw)
	again := produceBatchTo(t, c.agents[1], "dli", raw)
	if first != 0 || again != 0 {
		t.Fatalf("offsets %d then %d, want 0 both times", first, again)
	}
	testwait.Until(t, 10*time.Second, func() bool {
		return len(fetchValues(t, c.agents[2].client(t), "dli", 0)) > 0
	}, "the record to be readable")
	if got := fetchValues(t, c.agents[2].client(t), "dli", 0); len(got) != 1 {
		t.Fatalf("read %q, want the record once", got)
	}
}

// idempotentBatch is one record of producer id at epoch and sequence seq.
func idempotentBatch(t *testing.T, id int64, epoch int16, seq int32, value string) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = id, epoch, seq
	b, err := batch.Build(opts, []batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceBatchTo produces raw to partition 0 of topic through agent a
// with acks=all and returns its base offset.
func produceBatchTo(t *testing.T, a *running, topic string, raw []byte) int64 {
	t.Helper()
	req := kafkawire.Produce(topic, 0, raw, -1, 10*time.Second)
	resp, err := toSeed(t, a.client(t), req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce through agent %d: %v", a.id, kerr.ErrorForCode(p.ErrorCode))
	}
	return p.BaseOffset
}

// TestDisklessTransactions: a transactional producer writes to a
// diskless topic through one agent: the committed transaction's records
// are read at read_committed through another agent, the aborted one's
// are not (they are at read_uncommitted), and offsets leave room for the
// markers, which the batch coordinators committed inline.
func TestDisklessTransactions(t *testing.T) {
	c := disklessCluster(t)
	const topic = "dlt"
	c.create(topic, 2, 1, map[string]string{metadata.DisklessEnable: "true"})
	txn := c.agents[0].client(t, kgo.TransactionalID("dl-txn"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(20*time.Second))
	for n, commit := range []bool{true, false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := txn.ProduceSync(ctxT(t), &kgo.Record{Value: fmt.Appendf(nil, "%v-%d-%d", commit, n, i)}).FirstErr(); err != nil {
				t.Fatalf("produce in a transaction: %v", err)
			}
		}
		if err := txn.EndTransaction(ctxT(t), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	read := func(isolation kgo.IsolationLevel) map[string]int {
		cl := c.agents[2].client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := map[string]int{}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(ctxT(t), time.Second)
			fs := cl.PollFetches(ctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
			if len(got) >= 12 || isolation == kgo.ReadCommitted() && len(got) >= 8 {
				break
			}
		}
		return got
	}
	committed := read(kgo.ReadCommitted())
	if len(committed) != 8 {
		t.Fatalf("read_committed read %d distinct records, want the 8 committed: %v", len(committed), committed)
	}
	for v, n := range committed {
		if n != 1 || strings.HasPrefix(v, "false") {
			t.Fatalf("read_committed: %q read %d times", v, n)
		}
	}
	if all := read(kgo.ReadUncommitted()); len(all) != 12 {
		t.Fatalf("read_uncommitted read %d distinct records, want 12: %v", len(all), all)
	}
}

// TestDisklessMetadataPicksClientRack: Metadata names, as a diskless
// partition's leader, an agent of the client's rack (from its client id
// token, else the answering agent's own rack), spread over that rack's
// agents.
func TestDisklessMetadataPicksClientRack(t *testing.T) {
	racks := []string{"a", "b", "b"}
	i := 0
	c := startClusterWith(t, 3, func(cfg *Config) { cfg.Rack = racks[i]; i++ })
	c.create("dlr", 12, 1, map[string]string{metadata.DisklessEnable: "true"})
	rackOf := map[int32]string{}
	for j, a := range c.agents {
		rackOf[a.id] = racks[j]
	}
	leaders := func(a *running, clientID string) map[int32]int {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("dlr")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), a.client(t, kgo.ClientID(clientID)))
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int{}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || len(p.Replicas) != 1 || p.Replicas[0] != p.Leader {
				t.Fatalf("partition %d: %+v", p.Partition, p)
			}
			out[p.Leader]++
		}
		return out
	}
	if got := leaders(c.agents[0], "app strata_rack=b"); len(got) != 2 || got[c.agents[0].id] != 0 {
		t.Fatalf("rack b's client got leaders %v, want agents %d and %d only", got, c.agents[1].id, c.agents[2].id)
	}
	for a, n := range leaders(c.agents[1], "app") {
		if rackOf[a] != "b" {
			t.Fatalf("a client without a rack asking agent %d (rack b) got %d partitions led by agent %d of rack %s", c.agents[1].id, n, a, rackOf[a])
		}
	}
	if got := leaders(c.agents[2], "app strata_rack=a"); len(got) != 1 || got[c.agents[0].id] != 12 {
		t.Fatalf("rack a's client got leaders %v, want agent %d for all", got, c.agents[0].id)
	}
}

// TestDisklessJanitorDeletesOnlyOrphans: the janitor's pass deletes an
// old commit object no coordinator references and keeps the committed
// ones, whose records stay readable.
func TestDisklessJanitorDeletesOnlyOrphans(t *testing.T) {
	c := disklessCluster(t)
	c.create("dlj", 2, 1, map[string]string{metadata.DisklessEnable: "true"})
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("dlj"))
	for i := range 20 {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(c.dir, "store", sharedobj.KeyPrefix)
	committed, err := os.ReadDir(dir)
	if err != nil || len(committed) == 0 {
		t.Fatalf("no committed object: %v", err)
	}
	orphan, err := sharedobj.NewID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.agents[1].bucket.Put(ctxT(t), orphan.Key(), []byte("an upload whose commit never came"), objstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	// Every object is older than a 10 ms grace: only references keep them.
	n, err := c.agents[2].diskless.CollectOrphans(ctxT(t), 10*time.Millisecond)
	if err != nil || n != 1 {
		t.Fatalf("pass deleted %d objects (%v), want the orphan alone", n, err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "store", orphan.Key())); !os.IsNotExist(err) {
		t.Fatalf("orphan still there: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != len(committed) {
		t.Fatalf("%d objects left of %d committed", len(left), len(committed))
	}
	// The records went to either partition (kgo's sticky partitioner).
	if got := append(fetchValues(t, c.agents[1].client(t), "dlj", 0), fetchValues(t, c.agents[1].client(t), "dlj", 1)...); len(got) != 20 {
		t.Fatalf("read %d records after the pass, want 20", len(got))
	}
}

// TestDisklessRetention: retention.ms raises a diskless partition's log
// start past the expired records: ListOffsets' earliest moves, and a
// consumer from the start reads only the records kept.
func TestDisklessRetention(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) {
		cfg.Diskless.Writer.CommitInterval = 20 * time.Millisecond
		cfg.RetentionCheckInterval = 100 * time.Millisecond
	})
	c.create("dlret", 1, 1, map[string]string{metadata.DisklessEnable: "true", metadata.RetentionMs: "600000"})
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("dlret"))
	for i := range 15 {
		r := &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}
		if i < 10 {
			r.Timestamp = time.Now().Add(-time.Hour) // expired under 10 minutes
		}
		if err := prod.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(c.agents[1].client(t))
	testwait.Until(t, 20*time.Second, func() bool {
		starts, err := adm.ListStartOffsets(ctxT(t), "dlret")
		if err != nil {
			return false
		}
		o, _ := starts.Lookup("dlret", 0)
		return o.Err == nil && o.Offset == 10
	}, "the log start to pass the 10 expired records")
	got := fetchValuesFrom(t, c.agents[2].client(t), "dlret", 0, 10)
	if len(got) != 5 || got[0] != "v10" {
		t.Fatalf("read %q from the new start, want v10..v14", got)
	}
}

// TestDisklessDeleteRecords: DeleteRecords through any agent raises a
// diskless partition's log start at its coordinator; an offset above the
// high watermark is OFFSET_OUT_OF_RANGE.
func TestDisklessDeleteRecords(t *testing.T) {
	c := disklessCluster(t)
	c.create("dldel", 1, 1, map[string]string{metadata.DisklessEnable: "true"})
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("dldel"))
	for i := range 10 {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(c.agents[1].client(t))
	res, err := adm.DeleteRecords(ctxT(t), kadm.Offsets{"dldel": {0: {Topic: "dldel", Partition: 0, At: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dldel", 0); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	res, _ = adm.DeleteRecords(ctxT(t), kadm.Offsets{"dldel": {0: {Topic: "dldel", Partition: 0, At: 11}}})
	if r, _ := res.Lookup("dldel", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the end: %+v", r)
	}
	starts, err := kadm.NewClient(c.agents[2].client(t)).ListStartOffsets(ctxT(t), "dldel")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dldel", 0); o.Offset != 4 {
		t.Fatalf("earliest offset %d through another agent, want 4", o.Offset)
	}
	if got := fetchValuesFrom(t, c.agents[2].client(t), "dldel", 0, 4); len(got) != 6 || got[0] != "v4" {
		t.Fatalf("read %q from 4", got)
	}
}

// TestDisklessListOffsets: ListOffsets by time and for the largest
// timestamp (-3) are answered from the coordinator's index.
func TestDisklessListOffsets(t *testing.T) {
	c := disklessCluster(t)
	c.create("dlts", 1, 1, map[string]string{metadata.DisklessEnable: "true"})
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("dlts"))
	for _, ms := range []int64{1000, 5000, 3000} {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v"), Timestamp: time.UnixMilli(ms)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(ts int64) (int64, int64) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 7
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "dlts"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := toSeed(t, c.agents[1].client(t), req)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets %d: %v", ts, kerr.ErrorForCode(p.ErrorCode))
		}
		return p.Offset, p.Timestamp
	}
	if off, ts := ask(-3); off != 1 || ts != 5000 {
		t.Fatalf("max timestamp: offset %d at %d, want 1 at 5000", off, ts)
	}
	if off, _ := ask(2500); off != 1 {
		t.Fatalf("by time 2500: offset %d, want 1", off)
	}
	if off, _ := ask(-2); off != 0 {
		t.Fatalf("earliest %d", off)
	}
	if off, _ := ask(-1); off != 3 {
		t.Fatalf("latest %d", off)
	}
	// Agent 1 now holds a view of the partition; a record acknowledged
	// through agent 0 right after is in its next answer, as on a Kafka
	// leader.
	if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("w")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if off, _ := ask(-1); off != 4 {
		t.Fatalf("latest %d right after the fourth record was acknowledged, want 4", off)
	}
}

// TestDisklessObjectCompaction: the batches of a diskless partition move
// from commit objects into tiered segments, and a consumer still reads
// every record from offset 0, the compacted ones through the manifest.
func TestDisklessObjectCompaction(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) {
		cfg.Diskless.Writer.CommitInterval = 20 * time.Millisecond
		cfg.Diskless.CompactionMaxLag = 300 * time.Millisecond
	})
	c.create("dlc", 2, 1, map[string]string{metadata.DisklessEnable: "true", metadata.SegmentBytes: "2048"})
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("dlc"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 60)
	segments := func() float64 {
		var n float64
		for _, a := range c.agents {
			m, err := metricstext.Scrape(ctxT(t), "http://"+a.HTTPAddr().String()+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			v, _ := m.Value("strata_diskless_compaction_segments_total")
			n += v
		}
		return n
	}
	testwait.Until(t, 30*time.Second, func() bool { return segments() >= 2 }, "both partitions to be compacted")
	compacted := 0
	for _, a := range c.agents {
		for _, bc := range a.coords.LoadedDiskless() {
			for _, k := range bc.Keys() {
				if v, _, err := bc.Read(k, -1, 1); err == nil && v.CompactedEnd > 0 {
					compacted++
				}
			}
		}
	}
	if compacted != 2 {
		t.Fatalf("%d partitions with a compacted end above 0, want 2", compacted)
	}
	produce(60, 80)
	var got []string
	for p := range int32(2) {
		got = append(got, fetchValues(t, c.agents[2].client(t), "dlc", p)...)
	}
	seen := map[string]bool{}
	for _, v := range got {
		seen[v] = true
	}
	if len(got) != 80 || len(seen) != 80 {
		t.Fatalf("read %d records (%d distinct) after compaction, want 80", len(got), len(seen))
	}
}
