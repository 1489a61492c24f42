package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestFranz runs franz-go (kgo producer/consumer and kadm admin) against one
// agent; subtests use distinct topics.
func TestFranz(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	t.Run("ProduceConsume", func(t *testing.T) { franzProduceConsume(t, a.Addr()) })
	t.Run("NullAndEmpty", func(t *testing.T) { franzNullAndEmpty(t, a.Addr()) })
	t.Run("Admin", func(t *testing.T) { franzAdmin(t, a.Addr()) })
	t.Run("Offsets", func(t *testing.T) { franzOffsets(t, a.Addr()) })
	t.Run("Cluster", func(t *testing.T) { franzCluster(t, a) })
}

// franzProduceConsume: an idempotent acks=all producer writes 2000 records
// over 3 partitions; a direct consumer reads exactly those back per partition.
func franzProduceConsume(t *testing.T, addr string) {
	const topic, partitions, perPartition = "franz-rw", 3, 667
	createTopic(t, newAdmin(t, addr), topic, partitions, nil)
	base := time.UnixMilli(time.Now().UnixMilli() - 60_000)
	want := map[int32][]rec{}
	var all []*kgo.Record
	// Interleave partitions so that batches for all three are in flight at once.
	for i := 0; i < perPartition; i++ {
		for p := int32(0); p < partitions; p++ {
			if len(want[p]) == 0 {
				want[p] = testRecords("rw", p, perPartition, base)
			}
			all = append(all, kgoRecord(topic, p, want[p][i]))
		}
	}
	all = all[:2000] // 3*667 = 2001; keep exactly 2000
	want[2] = want[2][:perPartition-1]

	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(ctxT(t, opTimeout), all...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	got := consumeKgo(t, addr, topic)
	if len(got) != partitions {
		t.Fatalf("consumed %d partitions, want %d", len(got), partitions)
	}
	for p := int32(0); p < partitions; p++ {
		var g []rec
		for i, kr := range got[p] {
			if kr.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", p, i, kr.Offset)
			}
			g = append(g, fromKgo(kr, true))
		}
		if d := sameRecords(want[p], g); d != "" {
			t.Errorf("partition %d: %s", p, d)
		}
	}
}

// franzNullAndEmpty: a null value (tombstone), an empty value, an empty key
// and a null key must all come back as they were sent.
func franzNullAndEmpty(t *testing.T, addr string) {
	const topic = "franz-null-empty"
	createTopic(t, newAdmin(t, addr), topic, 1, nil)
	want := []rec{
		{Key: []byte("k"), Value: nil},
		{Key: []byte("k"), Value: []byte{}},
		{Key: []byte{}, Value: []byte("v")},
		{Key: nil, Value: []byte("v")},
		{Key: []byte{0, 0xff, 0}, Value: []byte{0xff, 0, 0xfe}, Headers: []hdr{{"", ""}, {"b", "\x00"}}},
	}
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, r := range want {
		// One at a time: each record is its own batch.
		if err := cl.ProduceSync(ctxT(t, opTimeout), kgoRecord(topic, 0, r)).FirstErr(); err != nil {
			t.Fatalf("produce %v: %v", r, err)
		}
	}
	var got []rec
	for _, kr := range consumeKgo(t, addr, topic)[0] {
		got = append(got, fromKgo(kr, false))
	}
	if d := sameRecords(want, got); d != "" {
		t.Error(d)
	}
}

// franzOffsets: ListOffsets earliest / latest / by timestamp, DeleteRecords
// and what a consumer sees after it.
func franzOffsets(t *testing.T, addr string) {
	const topic = "franz-offsets"
	adm := newAdmin(t, addr)
	ctx := ctxT(t, opTimeout)
	createTopic(t, adm, topic, 2, nil)
	base := time.UnixMilli(time.Now().UnixMilli() - 3_600_000)
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := 0; i < 10; i++ {
		// One second apart, so "first offset at or after ts" is unambiguous.
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	// Separate produce calls give separate batches, so timestamps are
	// indexed per batch as well as per record.
	for _, r := range rs[:5] {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, rs[5:]...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	check := func(name string, lo kadm.ListedOffsets, err error, p int32, want int64) {
		t.Helper()
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ok := lo.Lookup(topic, p)
		if !ok || o.Offset != want {
			t.Errorf("%s partition %d: %+v, want offset %d", name, p, o, want)
		}
	}
	lo, err := adm.ListStartOffsets(ctx, topic)
	check("earliest", lo, err, 0, 0)
	check("earliest", lo, err, 1, 0)
	lo, err = adm.ListEndOffsets(ctx, topic)
	check("latest", lo, err, 0, 10)
	check("latest", lo, err, 1, 0)
	for _, c := range []struct {
		ms   int64
		want int64
	}{
		{base.UnixMilli() - 1, 0},
		{base.Add(3 * time.Second).UnixMilli(), 3},
		{base.Add(3*time.Second).UnixMilli() + 1, 4},
		{base.Add(7 * time.Second).UnixMilli(), 7},
	} {
		lo, err = adm.ListOffsetsAfterMilli(ctx, c.ms, topic)
		check(fmt.Sprintf("by timestamp %d", c.ms-base.UnixMilli()), lo, err, 0, c.want)
	}
	// After the last timestamp Kafka answers the end offset (-1 in v0
	// terms is mapped to the end by kadm).
	lo, err = adm.ListOffsetsAfterMilli(ctx, base.Add(time.Hour).UnixMilli(), topic)
	if err == nil {
		if o, _ := lo.Lookup(topic, 0); o.Offset != 10 && o.Offset != -1 {
			t.Errorf("after last timestamp: offset %d, want 10 (or -1)", o.Offset)
		}
	}

	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, del)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if r, _ := dr.Lookup(topic, 0); r.LowWatermark != 4 {
		t.Errorf("delete records low watermark %d, want 4", r.LowWatermark)
	}
	lo, err = adm.ListStartOffsets(ctx, topic)
	check("earliest after delete", lo, err, 0, 4)
	lo, err = adm.ListEndOffsets(ctx, topic)
	check("latest after delete", lo, err, 0, 10)
	got := consumeKgo(t, addr, topic)[0]
	var vals []string
	for _, r := range got {
		vals = append(vals, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	if want := []string{"4:4", "5:5", "6:6", "7:7", "8:8", "9:9"}; !slices.Equal(vals, want) {
		t.Errorf("after delete records consumed %v, want %v", vals, want)
	}
}

// franzCluster: broker metadata and log dirs describe this one agent.
func franzCluster(t *testing.T, a *testagent.Agent) {
	adm := newAdmin(t, a.Addr())
	ctx := ctxT(t, opTimeout)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("broker metadata: %v", err)
	}
	if md.Cluster == "" {
		t.Errorf("no cluster id")
	}
	if len(md.Brokers) != 1 {
		t.Fatalf("brokers %v, want one", md.Brokers)
	}
	b := md.Brokers[0]
	if addr := fmt.Sprintf("%s:%d", b.Host, b.Port); addr != a.Addr() {
		t.Errorf("advertised %s, want %s", addr, a.Addr())
	}
	if md.Controller != b.NodeID {
		t.Errorf("controller %d, want the only broker %d", md.Controller, b.NodeID)
	}

	const topic = "franz-logdirs"
	createTopic(t, adm, topic, 2, nil)
	// Uncompressed, so the log holds at least the 1000 value bytes.
	cl := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatalf("describe log dirs: %v", err)
	}
	bd := dirs[b.NodeID]
	if err := bd.Error(); err != nil || len(bd) == 0 {
		t.Fatalf("log dirs of broker %d: %v (%d dirs)", b.NodeID, err, len(bd))
	}
	var seen []int32
	var size1 int64
	for _, d := range bd {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic {
				seen = append(seen, p.Partition)
				if p.Partition == 1 {
					size1 = p.Size
				}
			}
		})
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []int32{0, 1}) {
		t.Errorf("log dirs list partitions %v of %s, want [0 1]", seen, topic)
	}
	if size1 < 1000 {
		t.Errorf("partition 1 size %d, want >= 1000 bytes", size1)
	}
}
