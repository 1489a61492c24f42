package agent

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/internal/vfs"
)

// TestPipelinedProducesShareAnFsync: Produces sent back to back on one
// connection are all written while the first one's fsync is in flight, so
// one more fsync covers the rest; their answers come in request order, and
// a Fetch sent behind them on the same connection is answered after them
// and sees every record. Without pipelining the second Produce would not
// be read until the first was answered: five appends would need five
// fsyncs.
func TestPipelinedProducesShareAnFsync(t *testing.T) {
	fs := vfs.NewFaulty(vfs.Default)
	a := start(t, testConfig(t.TempDir()), fs)
	cl := a.client(t)
	createTopic(t, cl, "pipe", 1, nil)
	// The first append also persists the leader epoch, whose fsync must
	// not be the held one.
	if code, _ := produceRaw(t, cl, "pipe", 0, "first"); code != 0 {
		t.Fatalf("first produce: code %d", code)
	}
	counter := func(name string) float64 {
		return counterValue(t, a, name, "topic", "pipe", "partition", "0")
	}
	fsyncsBefore := counter("strata_partition_fsyncs_total")

	conn, err := kafkawire.Dial(ctxT(t), a.KafkaAddr().String(), kafkawire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	release := fs.HoldSyncs()
	defer release()
	const produces = 5
	for i := range produces {
		req := kafkawire.Produce("pipe", 0, recordBatch(t, fmt.Sprintf("v%d", i)), -1, 10*time.Second)
		req.Version = 8
		if err := conn.Send(ctxT(t), req); err != nil {
			t.Fatal(err)
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 0, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "pipe"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if err := conn.Send(ctxT(t), fetch); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() bool {
		return counter("strata_partition_appends_total") == 1+produces
	}, "every pipelined batch written behind the held fsync")
	// Straight on the socket: a Receive that times out would close the
	// Conn, and a read that gets nothing leaves its stream intact.
	nc := conn.NetConn()
	nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while the fsync is held: %v, want no answer before the fsync", err)
	}
	release()

	// Receive checks that each answer carries its request's correlation
	// id: answers out of request order fail here.
	for i := range produces {
		resp, err := conn.Receive(ctxT(t))
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(1+i) {
			t.Fatalf("answer %d: code %d offset %d, want 0 at offset %d", i, p.ErrorCode, p.BaseOffset, 1+i)
		}
	}
	raw, err := conn.Receive(ctxT(t))
	if err != nil {
		t.Fatalf("fetch answer: %v", err)
	}
	fresp := raw.(*kmsg.FetchResponse)
	part := fresp.Topics[0].Partitions[0]
	fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "pipe"}, &part, kgo.DefaultDecompressor(), nil)
	if part.HighWatermark != 1+produces || len(fetched.Records) != 1+produces {
		t.Fatalf("fetch behind the produces: HW %d, %d records; want %d of each", part.HighWatermark, len(fetched.Records), 1+produces)
	}
	if n := counter("strata_partition_fsyncs_total") - fsyncsBefore; n > 2 {
		t.Fatalf("%v fsyncs for %d pipelined produces, want at most 2 (the held one and one for the rest)", n, produces)
	}
}
