package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/testwait"
)

// A replica added to a partition that holds a decompression bomb from
// before the bound copies the bomb in its empty form and every other batch
// byte for byte: followers get what consumers get, so the new replica's
// log is checked throughout (its W is 0) and it serves no bomb when it
// leads. The bomb is written as a build before the bound would have: into
// the log directory of a stopped agent, which then has no checks file.
func TestFollowerCopiesStoredBombEmptied(t *testing.T) {
	c := startCluster(t, 2)
	c.create("qr", 1, 1, nil)
	li := c.leaderOf("qr", 0)
	other := 1 - li
	cl := c.client(kgo.DefaultProduceTopic("qr"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.agents[li].stop(t)

	appendStoredBomb(t, c.cfgs[li].DataDir, "qr") // offset 2
	c.restart(li)
	c.waitMembers(2)
	cl = c.client(kgo.DefaultProduceTopic("qr"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("c")}).FirstErr(); err != nil { // offset 3, above W
		t.Fatal(err)
	}

	adm := kadm.NewClient(c.client())
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("qr", 0, []int32{c.agents[li].id, c.agents[other].id})
	resp, err := adm.AlterPartitionAssignments(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp["qr"][0].Err; err != nil {
		t.Fatalf("alter: %v %s", err, resp["qr"][0].ErrMessage)
	}
	var follower *partition.Partition
	testwait.Until(t, 30*time.Second, func() bool {
		follower = localPartition(c.agents[other], "qr", 0)
		return follower != nil && follower.LocalLog().LogEndOffset() == 4
	}, "the new replica to copy offsets 0-3")
	leader := localPartition(c.agents[li], "qr", 0)
	if w := leader.LocalLog().ValidatedFrom(); w != 3 {
		t.Fatalf("leader W %d, want 3 (the log end when first opened by this build)", w)
	}
	want, got := logBatches(t, leader), logBatches(t, follower)
	if len(want) != 4 || len(got) != 4 {
		t.Fatalf("leader has %d batches, follower %d; want 4", len(want), len(got))
	}
	empty, err := batch.Emptied(want[2])
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		w := want[i]
		if i == 2 {
			w = empty
		}
		if !bytes.Equal(got[i], w) {
			t.Errorf("follower batch %d (%d bytes) differs from the leader's (%d bytes, emptied: %v)", i, len(got[i]), len(w), i == 2)
		}
	}
}

// appendStoredBomb writes a gzip bomb (one 64 MiB record; the limit is
// 16 MiB) to the log of partition 0 of topic on the stopped agent with
// data directory dataDir, as a build before the bound would have, and
// removes the checks file such a build would not have written. It returns
// the bomb's batch.
func appendStoredBomb(t *testing.T, dataDir, topic string) []byte {
	t.Helper()
	dir := filepath.Join(dataDir, "log", partition.DirName(topic, 0))
	l, err := log.Open(dir, log.DefaultConfig(), log.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	bomb := bombBatch(t, batch.CodecGzip, 64<<20)
	if _, err := l.Append(bomb, l.LatestEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "decompression-checks")); err != nil {
		t.Fatal(err)
	}
	return bomb
}

// A pre-bound bomb that tiering moved to the bucket (local retention
// deleted its segment) is served from there by the same rule: a consumer
// from offset 0 reads every other record and never the bomb's, which is
// checked once.
func TestTieredStoredBombIsSkipped(t *testing.T) {
	dir := t.TempDir()
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	a := start(t, cfg, nil)
	cl := a.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "tq", 1, tieredTopicConfigs)
	values := produceValues(t, cl, "tq", 0, 2) // offsets 0, 1
	cl.Close()
	a.stop(t)
	appendStoredBomb(t, cfg.DataDir, "tq") // offset 2
	a = start(t, cfg, nil)
	cl = a.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	values = append(values, nil) // the bomb: never delivered
	values = append(values, produceValues(t, cl, "tq", 3, 300)...)
	if start := waitTiered(t, a, "tq", 16384+2*8192); start <= 2 {
		t.Fatalf("local log starts at %d: the bomb is still on disk", start)
	}

	reader := a.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tq": {0: kgo.NewOffset().AtStart()}}))
	ctx := ctxT(t)
	read := 0
	for read < len(values)-1 && ctx.Err() == nil {
		fs := reader.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= int64(len(values)) || values[r.Offset] == nil || !bytes.Equal(r.Value, values[r.Offset]) {
				t.Fatalf("record at offset %d (%d bytes) is not the one produced there", r.Offset, len(r.Value))
			}
			read++
		})
	}
	if read != len(values)-1 {
		t.Fatalf("read %d records, want %d", read, len(values)-1)
	}
	if n := counterValue(t, a, "strata_fetch_decompression_checks_total", "verdict", "bad"); n != 1 {
		t.Errorf("bad decompression checks %v, want 1", n)
	}
}
