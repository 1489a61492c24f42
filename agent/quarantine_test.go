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

	dir := filepath.Join(c.cfgs[li].DataDir, "log", partition.DirName("qr", 0))
	l, err := log.Open(dir, log.DefaultConfig(), log.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	bomb := bombBatch(t, batch.CodecGzip, 64<<20) // the limit is 16 MiB
	if _, err := l.Append(bomb, l.LatestEpoch()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordBatch(t, "c"), l.LatestEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "decompression-checks")); err != nil {
		t.Fatal(err)
	}
	c.restart(li)
	c.waitMembers(2)

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
	if w := leader.LocalLog().ValidatedFrom(); w != 4 {
		t.Fatalf("leader W %d, want 4 (the log end when first opened by this build)", w)
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
