package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/testagent"
)

// A cleaned compacted log is where clients trip: offsets have gaps,
// batches start before their first record, and a producer's last batch is
// kept with no records at all. TestCompactedTopicClients (issue 22) reads
// one such log with every client Strata supports and compares what each
// hands the application, offsets included, with franz-go's direct read of
// the same log (itself checked against what was produced).
//
// Each client's driver returns one line per record, "<phase> <offset>
// <key> <value>" with NULL for a null key or value (testdata's scripts
// print them):
//   - A: a consumer group reads from the start and stops after the record
//     at Stop, whose next offset the cleaner removed; it commits Stop+1,
//     an offset inside a gap, and leaves.
//   - B: the same group again resumes there and reads to End-1: nothing
//     read twice, nothing skipped.
//   - S<i>: a consumer at Seeks[i], an offset the cleaner removed (S1's
//     is inside a batch the cleaner emptied, S2's after a segment's last
//     batch), prints the first record it gets: the next one in the log.
//   - C: a consumer at read_committed reads from the start to End-1 of
//     a compacted topic whose aborted data the cleaner removed, for the
//     clients that read_committed is tested with.
const (
	compactClientsTopic = "compact-clients"
	compactTxnTopic     = "compact-clients-txn"
	// rollKey is the last record of both topics: its own key, in the
	// active segment, which the cleaner never touches.
	rollKey = "roll"
)

// compactRead is what one client is asked to do with the cleaned log.
type compactRead struct {
	Topic, Group string
	Stop, End    int64
	Seeks        []int64
}

// compactClient reads phases A, B and S, and C when committed is not nil;
// a client with a known bug that the agent cannot work around skips, with
// skip saying why.
type compactClient struct {
	name      string
	skip      string
	read      func(t *testing.T, addr string, r compactRead) []string
	committed func(t *testing.T, addr, topic string, end int64) []string
}

// TestCompactedTopicClients (issue 22): franz-go, sarama, kcat,
// confluent-kafka-python, kafka-python and kafkajs read a cleaned
// compacted topic exactly as franz-go's direct read does (see above);
// kafka-go is driven the same way but skips (see its entry).
func TestCompactedTopicClients(t *testing.T) {
	clients := []compactClient{
		{name: "franz-go", read: kgoCompactRead, committed: kgoCommittedRead},
		{name: "sarama", read: saramaCompactRead},
		// Kafka's cleaner leaves consecutive emptied batches too (after a
		// pass that merges segments), and kafka-go cannot read them.
		{name: "kafka-go", read: kafkaGoCompactRead, skip: "segmentio/kafka-go 0.4.51 panics (markRead: negative count) on " +
			"two consecutive batches with no records, from Kafka as from Strata (upstream issues 874 and 1393, fixes unmerged)"},
		{name: "kcat", read: kcatCompactRead(kcatPath(t)), committed: kcatCommittedRead(kcatPath(t))},
		scriptCompactClient(confluentKafkaPython(t), true),
		scriptCompactClient(kafkaPython(t), false),
		scriptCompactClient(kafkajs(t), false),
	}
	a := testagent.Start(t, testagent.Options{ExtraArgs: append([]string{"--group-initial-rebalance-delay=100ms"}, cleanerArgs...)})
	addr := a.Addr()

	want := produceCompactWorkload(t, a)
	ref := referenceRead(t, addr, compactClientsTopic, kgo.ReadUncommitted())
	checkReference(t, compactClientsTopic, ref, want)
	r := compactRead{Topic: compactClientsTopic, End: ref[len(ref)-1].offset + 1}
	r.Stop, r.Seeks = pickGaps(t, a, ref)
	t.Logf("%d records left of offsets [0, %d); the groups stop at %d, the seeks go to %v", len(ref), r.End, r.Stop, r.Seeks)

	txnWant := produceAbortedAndClean(t, a)
	txnRef := referenceRead(t, addr, compactTxnTopic, kgo.ReadCommitted())
	checkReference(t, compactTxnTopic, txnRef, txnWant)
	txnEnd := txnRef[len(txnRef)-1].offset + 1

	var wantLines, wantCommitted []string
	for _, rr := range ref {
		phase := "A "
		if rr.offset > r.Stop {
			phase = "B "
		}
		wantLines = append(wantLines, phase+rr.line())
	}
	for i, s := range r.Seeks {
		j := slices.IndexFunc(ref, func(rr refRecord) bool { return rr.offset >= s })
		wantLines = append(wantLines, "S"+strconv.Itoa(i)+" "+ref[j].line())
	}
	for _, rr := range txnRef {
		wantCommitted = append(wantCommitted, "C "+rr.line())
	}

	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			t.Parallel() // each client has its own groups; the logs are only read
			cr := r
			cr.Group = "compact-" + c.name
			if got := c.read(t, addr, cr); !slices.Equal(got, wantLines) {
				t.Errorf("%s read the cleaned log differently from franz-go's direct read:\n%s", c.name,
					firstLineDiff(strings.Join(wantLines, "\n"), strings.Join(got, "\n")))
			}
			if c.committed == nil {
				return
			}
			if got := c.committed(t, addr, compactTxnTopic, txnEnd); !slices.Equal(got, wantCommitted) {
				t.Errorf("%s at read_committed after aborted data was cleaned:\n%s", c.name,
					firstLineDiff(strings.Join(wantCommitted, "\n"), strings.Join(got, "\n")))
			}
		})
	}
}

// compactTopicConfig: small segments, cleaned as soon as anything is
// dirty; segment.ms lets rollKey's record, stamped in the future, seal the
// segment before it.
func compactTopicConfig() map[string]*string {
	return map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"),
		"segment.bytes":  kadm.StringPtr("8192"),
		"segment.ms":     kadm.StringPtr("60000"),
		// The last sealed segment can be one small batch after the
		// ~8 KB one of produceCompactWorkload: still above this ratio.
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.001"),
	}
}

// compactCodec is one that every client reads (kafkajs and Debian's
// kafka-python lack snappy, franz-go's default); the cleaner rewrites
// what survives of a batch with its codec.
var compactCodec = kgo.ProducerBatchCompression(kgo.GzipCompression())

// rollRecord is stamped ahead by more than segment.ms past the records
// before it, so it starts a new segment and every record before it is
// sealed, hence cleanable.
func rollRecord(ahead time.Duration) *kgo.Record {
	return &kgo.Record{Key: []byte(rollKey), Value: []byte(rollKey), Timestamp: time.Now().Add(ahead)}
}

// produceCompactWorkload writes a keyed workload with overwrites and 1%
// tombstones from several idempotent producers, each ending with a batch
// that the next producer overwrites (the cleaner keeps such a last batch
// of a producer, emptied), and waits for the cleaner. It returns each
// key's latest value (nil for a tombstone).
func produceCompactWorkload(t *testing.T, a *testagent.Agent) map[string][]byte {
	createTopic(t, newAdmin(t, a.Addr()), compactClientsTopic, 1, compactTopicConfig())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	want := map[string][]byte{}
	const producers, keys, updates = 4, 80, 500
	for p := range producers + 1 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic(compactClientsTopic),
			kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(2048), compactCodec)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 1)
		for i := range updates {
			k := "key-" + strconv.Itoa(rng.IntN(keys))
			var v []byte
			if rng.IntN(100) != 0 {
				v = fmt.Appendf(nil, "%s=%d.%d", k, p, i)
			}
			want[k] = v
			cl.Produce(ctxT(t, opTimeout), &kgo.Record{Key: []byte(k), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		if err := cl.Flush(ctxT(t, opTimeout)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatalf("produce: %v", err)
		default:
		}
		// Alone in its batch: the producer's last, overwritten later, so
		// the cleaner keeps it empty.
		last := &kgo.Record{Key: []byte("hot"), Value: fmt.Appendf(nil, "hot=%d", p)}
		if p == producers {
			last = &kgo.Record{Key: []byte("tail"), Value: []byte("tail=1")}
		}
		want[string(last.Key)] = last.Value
		if err := cl.ProduceSync(ctxT(t, opTimeout), last).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", last.Key, err)
		}
		cl.Close()
	}
	// "gap" then ends the segment that "tail" is in, and both are
	// overwritten in a later sealed segment: the cleaner empties tail's
	// batch, the last of its producer, and removes gap's, so that segment
	// ends with a batch holding no records and a gap (where Kafka's fetch
	// answers with only that batch). The next segment holds one record of
	// nearly segment.bytes, uncompressed, so no cleaning pass merges it
	// with the one before, which keeps the last producer's latest values.
	cl := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(compactClientsTopic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, r := range []*kgo.Record{
		{Key: []byte("gap"), Value: []byte("gap=1")},
		{Key: []byte("wall"), Value: []byte(strings.Repeat("w", 8000)), Timestamp: time.Now().Add(2 * time.Minute)},
		{Key: []byte("tail"), Value: []byte("tail=2"), Timestamp: time.Now().Add(2 * time.Minute)},
		{Key: []byte("gap"), Value: []byte("gap=2"), Timestamp: time.Now().Add(2 * time.Minute)},
		rollRecord(4 * time.Minute),
	} {
		want[string(r.Key)] = r.Value
		if err := cl.ProduceSync(ctxT(t, opTimeout), r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", r.Key, err)
		}
	}
	// Cleaned through: every key read once (rollKey's segment is the
	// active one, which the cleaner never touches).
	waitFor(t, "the cleaner to leave one record per key", func() string {
		seen := map[string]bool{}
		for _, rr := range referenceRead(t, a.Addr(), compactClientsTopic, kgo.ReadUncommitted()) {
			if seen[rr.key] {
				return "key " + rr.key + " read twice, again at offset " + strconv.FormatInt(rr.offset, 10)
			}
			seen[rr.key] = true
		}
		return ""
	})
	return want
}

// produceAbortedAndClean writes committed and aborted transactions of a
// franz-go transactional producer over the same keys of compactTxnTopic
// (the last round aborts, so an aborted value is the newest of its keys),
// then waits until the cleaner has removed every aborted record, which a
// read_uncommitted read shows. It returns the latest committed values.
func produceAbortedAndClean(t *testing.T, a *testagent.Agent) map[string][]byte {
	createTopic(t, newAdmin(t, a.Addr()), compactTxnTopic, 1, compactTopicConfig())
	txn := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(compactTxnTopic), kgo.TransactionalID("compact-clients"), compactCodec)
	want := map[string][]byte{}
	for round := range 12 {
		commit := round%3 != 2
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			k := "key-" + strconv.Itoa((round*7+i)%25)
			v := fmt.Appendf(nil, "txn-%d-%d-%s", round, i, strings.Repeat("v", 50))
			if !commit {
				v = append([]byte("aborted-"), v...)
			} else {
				want[k] = v
			}
			txn.Produce(ctxT(t, opTimeout), &kgo.Record{Key: []byte(k), Value: v}, nil)
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := txn.Flush(ctxT(t, opTimeout)); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctxT(t, opTimeout), end); err != nil {
			t.Fatalf("end round %d: %v", round, err)
		}
	}
	plain := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(compactTxnTopic))
	if err := plain.ProduceSync(ctxT(t, opTimeout), rollRecord(2*time.Minute)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want[rollKey] = []byte(rollKey)
	waitFor(t, "the cleaner to remove the aborted records", func() string {
		for _, rr := range referenceRead(t, a.Addr(), compactTxnTopic, kgo.ReadUncommitted()) {
			if strings.HasPrefix(rr.value, "aborted-") {
				return "aborted record at offset " + strconv.FormatInt(rr.offset, 10)
			}
		}
		return ""
	})
	return want
}

// refRecord is one record of franz-go's direct read.
type refRecord struct {
	offset     int64
	key, value string // NULL for null
}

func (r refRecord) line() string { return fmt.Sprintf("%d %s %s", r.offset, r.key, r.value) }

// nullable prints b as the drivers do.
func nullable(b []byte) string {
	if b == nil {
		return "NULL"
	}
	return string(b)
}

// referenceRead reads topic's partition 0 with franz-go from the start to
// rollKey's record, without a group.
func referenceRead(t *testing.T, addr, topic string, level kgo.IsolationLevel) []refRecord {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(level))
	defer cl.Close()
	var out []refRecord
	ctx := ctxT(t, opTimeout)
	for len(out) == 0 || out[len(out)-1].key != rollKey {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go read %s: no %s record after %d records", topic, rollKey, len(out))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("franz-go read %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, refRecord{r.Offset, nullable(r.Key), nullable(r.Value)})
		})
	}
	return out
}

// checkReference fails unless ref's offsets strictly increase, have gaps,
// and each key's last record is its latest value in want.
func checkReference(t *testing.T, topic string, ref []refRecord, want map[string][]byte) {
	t.Helper()
	latest := map[string]string{}
	for i, r := range ref {
		if i > 0 && r.offset <= ref[i-1].offset {
			t.Fatalf("%s: offset %d after %d", topic, r.offset, ref[i-1].offset)
		}
		latest[r.key] = r.value
	}
	for k, v := range want {
		if got, ok := latest[k]; v != nil && got != string(v) || v == nil && ok && got != "NULL" {
			t.Fatalf("%s: key %s reads %q, want %q", topic, k, got, nullable(v))
		}
	}
	if end := ref[len(ref)-1].offset + 1; int64(len(ref)) == end {
		t.Fatalf("%s: all %d offsets are still there: the cleaner removed nothing", topic, end)
	}
}

// pickGaps returns where the groups stop (a record in the second half
// whose next offset was removed) and the offsets to seek to: a removed
// offset between two records, the last batch the cleaner emptied (a raw
// Fetch finds those), and the first offset after a segment's last
// batch when the cleaner removed the segment's tail (its files show it),
// where a read must go on in the next segment.
func pickGaps(t *testing.T, a *testagent.Agent, ref []refRecord) (stop int64, seeks []int64) {
	t.Helper()
	present := map[int64]bool{}
	for _, r := range ref {
		present[r.offset] = true
	}
	end := ref[len(ref)-1].offset
	stop, gap := -1, int64(-1)
	for _, r := range ref[len(ref)/2:] {
		if !present[r.offset+1] && r.offset+1 < end {
			if stop < 0 {
				stop = r.offset
			} else if gap < 0 {
				gap = r.offset + 1
			}
		}
	}
	empty := emptyBatches(t, a.Addr(), compactClientsTopic, end)
	tail := segmentTailGap(t, a, compactClientsTopic)
	if stop < 0 || gap < 0 || len(empty) == 0 || tail < 0 {
		t.Fatalf("the cleaned log lacks what the test reads through: stop %d, gap %d, empty batches %v, segment tail gap %d",
			stop, gap, empty, tail)
	}
	return stop, []int64{gap, empty[len(empty)-1], tail}
}

// segmentTailGap returns the offset after the last batch of the first
// sealed segment of partition 0 that ends before the next segment's base
// (the cleaner removed its last batches), or -1 if none does.
func segmentTailGap(t *testing.T, a *testagent.Agent, topic string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(a.DataDir(), "log", topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files) // names are zero-padded base offsets
	for i := 0; i+1 < len(files); i++ {
		nextBase, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(files[i+1]), ".log"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(files[i])
		if err != nil {
			t.Fatal(err)
		}
		var next int64 = -1
		if _, err := batch.Split(data, func(h batch.Header, _ []byte) error { next = h.NextOffset(); return nil }); err != nil {
			t.Fatalf("%s: %v", files[i], err)
		}
		if next >= 0 && next < nextBase {
			return next
		}
	}
	return -1
}

// emptyBatches returns the base offsets of the data batches below end that
// hold no records, read with raw Fetch requests one batch at a time
// (PartitionMaxBytes 1: each answer starts with the batch holding the
// offset asked for, or the next one).
func emptyBatches(t *testing.T, addr, topic string, end int64) []int64 {
	t.Helper()
	cl := newKgo(t, addr, kgo.MaxVersions(kversion.V3_0_0())) // Fetch by topic name, not id
	var empty []int64
	for offset := int64(0); offset < end; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t, opTimeout), cl)
		if err != nil {
			t.Fatalf("fetch at %d: %v", offset, err)
		}
		fp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
			t.Fatalf("fetch at %d: %v", offset, err)
		}
		data := fp.RecordBatches
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data); err != nil {
			t.Fatalf("fetch at %d: %d bytes, not a batch: %v", offset, len(data), err)
		}
		if b.NumRecords == 0 && b.Attributes&0x20 == 0 {
			empty = append(empty, b.FirstOffset)
		}
		offset = b.FirstOffset + int64(b.LastOffsetDelta) + 1
	}
	return empty
}

// kgoCompactRead: franz-go's group consumer, and direct consumption from
// an offset for the seeks.
func kgoCompactRead(t *testing.T, addr string, r compactRead) []string {
	var out []string
	group := func(phase string, until int64, commit bool) {
		cl := newKgo(t, addr, kgo.ConsumerGroup(r.Group), kgo.ConsumeTopics(r.Topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cl.Close()
		ctx := ctxT(t, opTimeout)
		for last := int64(-1); last < until; {
			fs := cl.PollRecords(ctx, 1)
			if ctx.Err() != nil {
				t.Fatalf("franz-go phase %s: stopped at offset %d", phase, last)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("franz-go phase %s: %v", phase, err) })
			fs.EachRecord(func(rec *kgo.Record) {
				last = rec.Offset
				out = append(out, fmt.Sprintf("%s %d %s %s", phase, rec.Offset, nullable(rec.Key), nullable(rec.Value)))
			})
		}
		if commit {
			offsets := map[string]map[int32]kgo.EpochOffset{r.Topic: {0: {Epoch: -1, Offset: r.Stop + 1}}}
			var err error
			cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, _ *kmsg.OffsetCommitResponse, e error) { err = e })
			if err != nil {
				t.Fatalf("franz-go commit: %v", err)
			}
		}
	}
	group("A", r.Stop, true)
	group("B", r.End-1, false)
	for i, s := range r.Seeks {
		cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.Topic: {0: kgo.NewOffset().At(s)}}))
		fs := cl.PollRecords(ctxT(t, opTimeout), 1)
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("franz-go seek to %d: %v", s, err) })
		if recs := fs.Records(); len(recs) > 0 {
			out = append(out, fmt.Sprintf("S%d %d %s %s", i, recs[0].Offset, nullable(recs[0].Key), nullable(recs[0].Value)))
		}
		cl.Close()
	}
	return out
}

// kgoCommittedRead reads at read_committed without a group.
func kgoCommittedRead(t *testing.T, addr, topic string, end int64) []string {
	var out []string
	for _, r := range referenceRead(t, addr, topic, kgo.ReadCommitted()) {
		out = append(out, "C "+r.line())
	}
	return out
}

// saramaCompactRead: sarama's ConsumerGroup (commits by MarkOffset and
// Commit, auto-commit off) and its partition Consumer for the seeks.
func saramaCompactRead(t *testing.T, addr string, r compactRead) []string {
	cfg := saramaConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	var out []string
	group := func(phase string, until int64, commit bool) {
		g, err := sarama.NewConsumerGroup([]string{addr}, r.Group, cfg)
		if err != nil {
			t.Fatalf("sarama consumer group: %v", err)
		}
		defer g.Close()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		h := &saramaCompactHandler{phase: phase, until: until, commit: commit, stop: r.Stop, done: cancel}
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{r.Topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Fatalf("sarama phase %s: %v", phase, err)
			}
		}
		if h.last < until {
			t.Fatalf("sarama phase %s: stopped at offset %d", phase, h.last)
		}
		out = append(out, h.lines...)
	}
	group("A", r.Stop, true)
	group("B", r.End-1, false)
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	for i, s := range r.Seeks {
		pc, err := cons.ConsumePartition(r.Topic, 0, s)
		if err != nil {
			t.Fatalf("sarama consume from %d: %v", s, err)
		}
		select {
		case m := <-pc.Messages():
			out = append(out, fmt.Sprintf("S%d %d %s %s", i, m.Offset, nullable(m.Key), nullable(m.Value)))
		case err := <-pc.Errors():
			t.Fatalf("sarama seek to %d: %v", s, err)
		case <-time.After(opTimeout):
			t.Fatalf("sarama seek to %d: nothing within %v", s, opTimeout)
		}
		pc.Close()
	}
	return out
}

type saramaCompactHandler struct {
	phase       string
	until, stop int64
	commit      bool
	done        func()
	last        int64
	lines       []string
}

func (h *saramaCompactHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaCompactHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaCompactHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.last = m.Offset
		h.lines = append(h.lines, fmt.Sprintf("%s %d %s %s", h.phase, m.Offset, nullable(m.Key), nullable(m.Value)))
		if m.Offset >= h.until {
			if h.commit {
				sess.MarkOffset(m.Topic, m.Partition, h.stop+1, "")
				sess.Commit()
			}
			h.done()
			return nil
		}
	}
	return nil
}

// kafkaGoCompactRead: segmentio/kafka-go's group Reader (CommitMessages
// commits the message's offset + 1) and a partition Reader for the seeks.
func kafkaGoCompactRead(t *testing.T, addr string, r compactRead) []string {
	var out []string
	read := func(phase string, rd *kafkago.Reader, until int64, commit bool) {
		defer rd.Close()
		ctx := ctxT(t, opTimeout)
		for {
			m, err := rd.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go phase %s after %d records: %v", phase, len(out), err)
			}
			out = append(out, fmt.Sprintf("%s %d %s %s", phase, m.Offset, nullable(m.Key), nullable(m.Value)))
			if m.Offset < until {
				continue
			}
			if commit {
				if err := rd.CommitMessages(ctx, m); err != nil {
					t.Fatalf("kafka-go commit: %v", err)
				}
			}
			return
		}
	}
	groupReader := func() *kafkago.Reader {
		return kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: r.Group, Topic: r.Topic,
			StartOffset: kafkago.FirstOffset, HeartbeatInterval: 200 * time.Millisecond, MaxWait: 200 * time.Millisecond})
	}
	read("A", groupReader(), r.Stop, true)
	read("B", groupReader(), r.End-1, false)
	for i, s := range r.Seeks {
		rd := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, Topic: r.Topic, MaxWait: 200 * time.Millisecond})
		if err := rd.SetOffset(s); err != nil {
			t.Fatalf("kafka-go set offset %d: %v", s, err)
		}
		read("S"+strconv.Itoa(i), rd, 0, false)
	}
	return out
}

// kcatCompactRead: kcat's balanced consumer (-G) exits after -c records
// and commits the offset after the last one it printed as it leaves;
// -o with -p reads from an offset.
func kcatCompactRead(kcat string) func(t *testing.T, addr string, r compactRead) []string {
	return func(t *testing.T, addr string, r compactRead) []string {
		// kcat is told how many records to read; the reference knows.
		var a, b int
		for _, l := range strings.Split(string(runKcat(t, kcat, nil, "-C", "-b", addr, "-t", r.Topic, "-p", "0", "-o", "beginning",
			"-e", "-q", "-f", "%o\n")), "\n") {
			if o, err := strconv.ParseInt(l, 10, 64); err == nil && o <= r.Stop {
				a++
			} else if err == nil {
				b++
			}
		}
		format := func(phase string) []string { return []string{"-q", "-Z", "-f", phase + " %o %k %s\n"} }
		var out []string
		for _, p := range []struct {
			phase string
			n     int
		}{{"A", a}, {"B", b}} {
			args := append([]string{"-C", "-b", addr, "-G", r.Group, "-X", "auto.offset.reset=earliest", "-c", strconv.Itoa(p.n)},
				format(p.phase)...)
			out = append(out, kcatLines(runKcat(t, kcat, nil, append(args, r.Topic)...))...)
		}
		for i, s := range r.Seeks {
			args := append([]string{"-C", "-b", addr, "-t", r.Topic, "-p", "0", "-o", strconv.FormatInt(s, 10), "-c", "1"},
				format("S"+strconv.Itoa(i))...)
			out = append(out, kcatLines(runKcat(t, kcat, nil, args...))...)
		}
		return out
	}
}

// kcatCommittedRead reads at read_committed to the partition's end (-e).
func kcatCommittedRead(kcat string) func(t *testing.T, addr, topic string, end int64) []string {
	return func(t *testing.T, addr, topic string, _ int64) []string {
		return kcatLines(runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-e",
			"-X", "isolation.level=read_committed", "-q", "-Z", "-f", "C %o %k %s\n"))
	}
}

func kcatLines(out []byte) []string {
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// scriptCompactClient runs a client script of testdata in mode
// "compacted" (and "compacted_committed" when committed is set), with
// compactRead's fields in its JSON argument.
func scriptCompactClient(lib clientLibrary, committed bool) compactClient {
	c := compactClient{name: lib.name}
	c.read = func(t *testing.T, addr string, r compactRead) []string {
		return compactScript(t, lib, clientRun{Bootstrap: addr, Security: "PLAINTEXT", Mode: "compacted", Topic: r.Topic,
			Group: r.Group, Stop: r.Stop, End: r.End, Seeks: r.Seeks})
	}
	if committed {
		c.committed = func(t *testing.T, addr, topic string, end int64) []string {
			return compactScript(t, lib, clientRun{Bootstrap: addr, Security: "PLAINTEXT", Mode: "compacted_committed",
				Topic: topic, End: end})
		}
	}
	return c
}

func compactScript(t *testing.T, lib clientLibrary, r clientRun) []string {
	stdout, stderr, ok := lib.run(t, r)
	if !ok {
		t.Fatalf("%s %s failed:\n%s", lib.name, r.Mode, stderr)
	}
	return kcatLines([]byte(stdout))
}

// kafkaPython is Debian's python3-kafka (kafka-python) for Debian's
// /usr/bin/python3, running testdata/kafka_python_client.py.
func kafkaPython(t *testing.T) clientLibrary {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import kafka").CombinedOutput(); err != nil {
		missingClient(t, "kafka-python", "install the Debian package python3-kafka", fmt.Errorf("%v: %s", err, out))
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kafka_python_client.py"))
	if err != nil {
		t.Fatal(err)
	}
	return clientLibrary{name: "kafka-python", command: []string{python, script}}
}
