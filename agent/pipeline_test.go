package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

	conn, err := net.Dial("tcp", a.KafkaAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const produces = 5
	var frames []byte
	for i := range produces {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 8, -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "pipe"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = recordBatch(t, fmt.Sprintf("v%d", i))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		frames = appendFrame(frames, req, int32(i))
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 11, 0, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "pipe"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	frames = appendFrame(frames, fetch, produces)

	release := fs.HoldSyncs()
	defer release()
	if _, err := conn.Write(frames); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() bool {
		return counter("strata_partition_appends_total") == 1+produces
	}, "every pipelined batch written behind the held fsync")
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read while the fsync is held: %v, want no answer before the fsync", err)
	}
	release()

	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range produces {
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 8
		readAnswer(t, conn, int32(i), resp)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(1+i) {
			t.Fatalf("answer %d: code %d offset %d, want 0 at offset %d", i, p.ErrorCode, p.BaseOffset, 1+i)
		}
	}
	fresp := kmsg.NewPtrFetchResponse()
	fresp.Version = 11
	readAnswer(t, conn, produces, fresp)
	part := fresp.Topics[0].Partitions[0]
	fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "pipe"}, &part, kgo.DefaultDecompressor(), nil)
	if part.HighWatermark != 1+produces || len(fetched.Records) != 1+produces {
		t.Fatalf("fetch behind the produces: HW %d, %d records; want %d of each", part.HighWatermark, len(fetched.Records), 1+produces)
	}
	if n := counter("strata_partition_fsyncs_total") - fsyncsBefore; n > 2 {
		t.Fatalf("%v fsyncs for %d pipelined produces, want at most 2 (the held one and one for the rest)", n, produces)
	}
}

// appendFrame appends req as a request frame (non-flexible header v1).
func appendFrame(dst []byte, req kmsg.Request, correlationID int32) []byte {
	body := kbin.AppendInt16(nil, req.Key())
	body = kbin.AppendInt16(body, req.GetVersion())
	body = kbin.AppendInt32(body, correlationID)
	body = kbin.AppendNullableString(body, nil)
	body = req.AppendTo(body)
	dst = kbin.AppendInt32(dst, int32(len(body)))
	return append(dst, body...)
}

// readAnswer reads one answer frame (header v0) into resp, checking that
// it answers the request with the given correlation id.
func readAnswer(t *testing.T, conn net.Conn, correlationID int32, resp kmsg.Response) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("answer %d: %v", correlationID, err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, frame); err != nil {
		t.Fatalf("answer %d: %v", correlationID, err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != correlationID {
		t.Fatalf("answer out of order: correlation id %d, want %d", got, correlationID)
	}
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatalf("answer %d: %v", correlationID, err)
	}
}
