package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// forEachStore runs a tiering test on the local fs store and on a real
// MinIO server (started here; the test fails without it). newStore makes
// an empty store and returns its --store URL.
func forEachStore(t *testing.T, fn func(t *testing.T, newStore func() string)) {
	t.Run("fs", func(t *testing.T) {
		fn(t, func() string { return "file://" + filepath.Join(t.TempDir(), "bucket") })
	})
	t.Run("minio", func(t *testing.T) {
		minio := miniotest.Start(t)
		for _, kv := range minio.Env() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		fn(t, func() string { return minio.StoreURL(minio.NewBucket(t), "strata") })
	})
}

// tieringTestConfig uploads and applies retention every few milliseconds.
func tieringTestConfig(t *testing.T, dataDir, store string) Config {
	cfg := testConfig(dataDir)
	cfg.Store = store
	cfg.Tiering.Interval = 20 * time.Millisecond
	cfg.Tiering.ChunkBytes = 4096 // several chunks per segment
	cfg.Tiering.CacheBytes = 1 << 20
	cfg.RetentionCheckInterval = 50 * time.Millisecond
	return cfg
}

// tieredTopicConfigs: small segments, and a local disk that keeps only
// about two of them.
var tieredTopicConfigs = map[string]string{"segment.bytes": "8192", "local.retention.bytes": "16384", "retention.ms": "-1"}

// produceValues writes n records of about 200 bytes to partition 0 and
// returns their values in offset order.
func produceValues(t *testing.T, cl *kgo.Client, topic string, from, n int) [][]byte {
	t.Helper()
	var recs []*kgo.Record
	var values [][]byte
	for i := from; i < from+n; i++ {
		v := fmt.Appendf(nil, "record-%06d-%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, 180))
		values = append(values, v)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: v})
	}
	for i := 0; i < len(recs); i += 20 { // several batches
		if err := cl.ProduceSync(ctxT(t), recs[i:min(i+20, len(recs))]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return values
}

// consumeFrom reads n records of partition 0 from offset and returns their
// values.
func consumeFrom(t *testing.T, a *running, topic string, offset int64, n int) [][]byte {
	t.Helper()
	cl := a.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(offset)}}),
		kgo.FetchMaxBytes(64<<10))
	var got [][]byte
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := offset + int64(len(got)); r.Offset != want {
				t.Fatalf("record at offset %d, want %d", r.Offset, want)
			}
			got = append(got, r.Value)
		})
	}
	return got
}

// waitTiered waits until the bucket holds everything sealed and local
// retention has left only the tail on disk (local.retention.bytes plus the
// segments not yet sealed or uploaded).
func waitTiered(t *testing.T, a *running, topic string, localLimit int64) (localStart int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range a.tier.Statuses() {
			if s.Topic == topic && s.LagSegments == 0 && s.LocalStart > 0 && s.RemoteStart == 0 && s.LocalBytes <= localLimit {
				return s.LocalStart
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("topic %s never tiered: %+v", topic, a.tier.Statuses())
	return 0
}

// TestTieringReadsBackFromTheBucket: with small segments and a small local
// retention, the local disk keeps only the tail and the bucket the rest; a
// consumer from offset 0 reads every record, byte-identical and in order;
// ListOffsets reports the bucket's start, the local start and the last
// tiered offset; a restart keeps all of it.
func TestTieringReadsBackFromTheBucket(t *testing.T) {
	forEachStore(t, testReadsBack)
}

func testReadsBack(t *testing.T, newStore func() string) {
	dir := t.TempDir()
	store := newStore()
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), store), nil)
	// Uncompressed, so that segment counts follow from record sizes.
	cl := a.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "tiered", 1, tieredTopicConfigs)
	values := produceValues(t, cl, "tiered", 0, 3000) // ~600 KiB, 70+ segments
	// Local retention keeps 16 KiB of uploaded segments, plus the active
	// segment of up to 8 KiB.
	waitTiered(t, a, "tiered", 16384+2*8192)
	if s := a.tier.Statuses()[0]; s.RemoteSegments < 50 {
		t.Errorf("the bucket holds %d segments, want 50 or more", s.RemoteSegments)
	}
	got := consumeFrom(t, a, "tiered", 0, len(values))
	if len(got) != len(values) {
		t.Fatalf("read %d records from offset 0, want %d", len(got), len(values))
	}
	for i := range values {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
	adm := kadm.NewClient(cl)
	earliest, err := adm.ListStartOffsets(ctxT(t), "tiered")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := earliest.Lookup("tiered", 0); o.Offset != 0 {
		t.Errorf("earliest offset %d, want 0 (in the bucket)", o.Offset)
	}
	// Mid-log reads start inside a remote segment and cross into the next.
	if got := consumeFrom(t, a, "tiered", 1234, 100); len(got) < 100 || !bytes.Equal(got[0], values[1234]) {
		t.Fatalf("read from 1234: %d records", len(got))
	}
	// Timestamp lookups find the first record at or after the time, in
	// the bucket, through the segments' time indexes.
	stamps := timestamps(t, a, "tiered", len(values))
	for _, at := range []int{0, 777, 1234, 2222} {
		ts := stamps[at]
		byTime, err := adm.ListOffsetsAfterMilli(ctxT(t), ts, "tiered")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := byTime.Lookup("tiered", 0)
		if o.Offset < 0 || o.Offset > int64(at) || stamps[o.Offset] < ts || o.Offset > 0 && stamps[o.Offset-1] >= ts {
			t.Errorf("offset for the timestamp of record %d (%d): %d", at, ts, o.Offset)
		}
	}

	a.stop(t)
	a = start(t, tieringTestConfig(t, filepath.Join(dir, "data"), store), nil)
	if got := consumeFrom(t, a, "tiered", 0, len(values)); len(got) != len(values) {
		t.Fatalf("after restart: read %d records from offset 0, want %d", len(got), len(values))
	}
	checkBucket(t, store, 50)
}

// checkBucket verifies every manifest in the store: objects present with
// their sizes and checksums, no orphans, at least minSegments segments.
func checkBucket(t *testing.T, store string, minSegments int) {
	t.Helper()
	b, err := objstore.Open(ctxT(t), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := tiering.Verify(ctxT(t), b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || len(rep.Orphans) > 0 || rep.Segments < minSegments {
		t.Fatalf("bucket: %d segments, problems %+v, orphans %+v", rep.Segments, rep.Problems, rep.Orphans)
	}
}

// TestTieringRestoresOnANewDisk: an agent started with an empty data
// directory on the bucket of an earlier one serves every uploaded record
// from offset 0 and appends after them.
func TestTieringRestoresOnANewDisk(t *testing.T) {
	forEachStore(t, testRestore)
}

func testRestore(t *testing.T, newStore func() string) {
	dir := t.TempDir()
	store := newStore()
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data1"), store), nil)
	cl := a.client(t)
	createTopic(t, cl, "restored", 1, map[string]string{"segment.bytes": "8192", "retention.ms": "-1"})
	values := produceValues(t, cl, "restored", 0, 500)
	waitUploaded(t, a, "restored")
	uploaded := a.tier.Statuses()[0].RemoteNext
	a.stop(t)

	// A rebuilt agent takes over its old id (--agent-id), as a Kafka broker
	// rebuilt on a new disk keeps its broker.id.
	cfg := tieringTestConfig(t, filepath.Join(dir, "data2"), store)
	cfg.AgentID = 0
	b := start(t, cfg, nil)
	got := consumeFrom(t, b, "restored", 0, int(uploaded))
	if int64(len(got)) != uploaded {
		t.Fatalf("restored agent read %d records, want the %d uploaded", len(got), uploaded)
	}
	for i := range got {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("record %d differs after restore", i)
		}
	}
	res := b.client(t).ProduceSync(ctxT(t), &kgo.Record{Topic: "restored", Partition: 0, Value: []byte("after")})
	if r, err := res.First(); err != nil || r.Offset != uploaded {
		t.Fatalf("append after restore: offset %v, %v; want %d", r, err, uploaded)
	}
}

// waitUploaded waits until every sealed segment of topic is in the bucket.
func waitUploaded(t *testing.T, a *running, topic string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range a.tier.Statuses() {
			if s.Topic == topic && s.LagSegments == 0 && s.RemoteNext > 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("topic %s never uploaded: %+v", topic, a.tier.Statuses())
}

// TestTieringSurvivesStoreFaults: while every store write fails (as with
// 503 SlowDown) or reads are slow, produce and local reads go on and the
// upload lag grows; nothing uploaded-looking is deleted locally. Once the
// faults stop, all of it reaches the bucket and reads back from offset 0.
func TestTieringSurvivesStoreFaults(t *testing.T) {
	forEachStore(t, testStoreFaults)
}

func testStoreFaults(t *testing.T, newStore func() string) {
	dir := t.TempDir()
	var faulty *objstore.FaultyBucket
	wrap := func(b objstore.Bucket) objstore.Bucket {
		faulty = objstore.NewFaulty(b)
		return faulty
	}
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), newStore())
	cfg.Tiering.RetryMax = 50 * time.Millisecond
	a, err := New(context.Background(), cfg, Options{Logger: quiet, WrapStore: wrap})
	if err != nil {
		t.Fatal(err)
	}
	r := runAgent(t, a)
	cl := r.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "faulty", 1, tieredTopicConfigs)

	// The producer's id comes from a block reserved in the store, as an
	// agent that has been running has one.
	values := produceValues(t, cl, "faulty", 0, 1)
	slowDown := errors.New("503 SlowDown: please reduce your request rate")
	faulty.FailAlways(objstore.OpPut, slowDown)
	faulty.SetLatency(objstore.OpGetRange, 200*time.Millisecond)
	values = append(values, produceValues(t, cl, "faulty", 1, 1499)...)
	if got := consumeFrom(t, r, "faulty", 0, len(values)); len(got) != len(values) {
		t.Fatalf("local read during store faults: %d records, want %d", len(got), len(values))
	}
	s := r.tier.Statuses()[0]
	if s.LagSegments < 10 || s.RemoteSegments != 0 || s.LocalStart != 0 || s.LastError == "" {
		t.Fatalf("during faults: %+v; want a growing lag, nothing uploaded, nothing deleted locally and the error shown", s)
	}

	faulty.Clear()
	waitTiered(t, r, "faulty", 16384+2*8192)
	got := consumeFrom(t, r, "faulty", 0, len(values))
	if len(got) != len(values) {
		t.Fatalf("after the faults: read %d records from offset 0, want %d", len(got), len(values))
	}
	for i := range values {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestFetchDoesNotWaitOnSlowStore: one Fetch asks for a partition whose
// offset is only in the store, which answers slowly, and for a local one.
// The local records come back after remote-fetch-max-wait, not after the
// store; the remote partition answers empty, without an error, and a later
// Fetch gets its records from the chunk the first one left loading.
func TestFetchDoesNotWaitOnSlowStore(t *testing.T) {
	dir := t.TempDir()
	var faulty *objstore.FaultyBucket
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	a, err := New(context.Background(), cfg, Options{Logger: quiet, WrapStore: func(b objstore.Bucket) objstore.Bucket {
		faulty = objstore.NewFaulty(b)
		return faulty
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := runAgent(t, a)
	cl := r.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "far", 1, tieredTopicConfigs)
	createTopic(t, cl, "near", 1, map[string]string{"remote.storage.enable": "false"})
	produceValues(t, cl, "far", 0, 1500)
	produceValues(t, cl, "near", 0, 10)
	waitTiered(t, r, "far", 16384+2*8192)

	faulty.SetLatency(objstore.OpGetRange, 3*time.Second)
	fetch := func() (far, near int, took time.Duration) {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
		for _, topic := range []string{"far", "near"} {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		began := time.Now()
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			p := rt.Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("%s: error code %d", rt.Topic, p.ErrorCode)
			}
			if rt.Topic == "far" {
				far = len(p.RecordBatches)
			} else {
				near = len(p.RecordBatches)
			}
		}
		return far, near, time.Since(began)
	}
	far, near, took := fetch()
	if near == 0 || far != 0 || took > 2*time.Second {
		t.Fatalf("with a 3 s store: far %d bytes, near %d bytes, after %v; want near's records, far empty, well before 3 s", far, near, took)
	}
	faulty.Clear()
	deadline := time.Now().Add(10 * time.Second)
	for far == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		far, _, _ = fetch()
	}
	if far == 0 {
		t.Fatal("the remote partition never answered once the store was fast again")
	}
}

// timestamps returns the timestamps (ms) of the first n records of
// partition 0, by offset.
func timestamps(t *testing.T, a *running, topic string, n int) []int64 {
	t.Helper()
	cl := a.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	var out []int64
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r.Timestamp.UnixMilli()) })
		cancel()
	}
	if len(out) < n {
		t.Fatalf("read %d timestamps, want %d", len(out), n)
	}
	return out
}

// TestTieringRetentionBytes: retention.bytes bounds the partition in the
// bucket and on disk together; the bucket keeps only what is in its
// manifest.
func TestTieringRetentionBytes(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), store), nil)
	cl := a.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "bounded", 1, map[string]string{"segment.bytes": "8192", "local.retention.bytes": "16384",
		"retention.bytes": "65536", "retention.ms": "-1"})
	produceValues(t, cl, "bounded", 0, 1500) // ~330 KiB
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := a.tier.Statuses()[0]
		// Kafka's rule keeps less than retention.bytes plus a segment; the
		// bucket holds no more, the rest of the total being local.
		if s.RemoteStart > 0 && s.LagSegments == 0 && s.RemoteBytes <= 65536+8192 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention.bytes never applied: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, err := objstore.Open(ctxT(t), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := tiering.Verify(ctxT(t), b, true)
	if err != nil || len(rep.Problems) > 0 || rep.Bytes > 65536+8192 {
		t.Fatalf("bucket after retention: %d bytes, problems %+v, %v", rep.Bytes, rep.Problems, err)
	}
}
