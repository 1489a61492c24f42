package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// Helpers for tests that must control the exact bytes: request versions
// (over kafkawire), a corrupted batch, or no request at all.

// rawMaxResponse bounds a response frame read by rawConn.
const rawMaxResponse = 64 << 20

type rawConn struct {
	c        *kafkawire.Conn
	versions map[int16]int16 // api key -> max version the agent serves
}

// dialRaw connects to addr and learns the agent's versions (ApiVersions v0,
// whose header every broker accepts).
func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	cfg := kafkawire.DefaultConfig()
	cfg.ClientID, cfg.MaxResponseBytes = "strata-e2e-raw", rawMaxResponse
	c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{c: c}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("api versions: %v", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 {
		t.Fatalf("api versions: error code %d", av.ErrorCode)
	}
	rc.versions = map[int16]int16{}
	for _, k := range av.ApiKeys {
		rc.versions[k.ApiKey] = k.MaxVersion
	}
	return rc
}

// version picks min(agent max, limit) for key, failing if it is below least.
func (rc *rawConn) version(t *testing.T, key, least, limit int16) int16 {
	t.Helper()
	v, ok := rc.versions[key]
	if !ok {
		t.Fatalf("agent does not serve api key %d", key)
	}
	v = min(v, limit)
	if v < least {
		t.Fatalf("agent serves api key %d only up to v%d; the test needs v%d", key, v, least)
	}
	return v
}

// roundTrip sends req at its set version and decodes the response.
func (rc *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return rc.c.Do(ctx, req)
}

// closeTimeout bounds how long a broken connection may stay open.
const closeTimeout = 10 * time.Second

// waitClosed reads from c until the peer closes it (EOF or reset) and fails
// the test if that does not happen within closeTimeout or if data arrives.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(closeTimeout)); err != nil {
		t.Fatal(err)
	}
	var b [512]byte
	n, err := c.Read(b[:])
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("agent answered %d bytes instead of closing the connection: %x", n, b[:n])
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("agent kept the connection open for %v", closeTimeout)
	}
	// io.EOF or ECONNRESET: closed, as wanted.
}

// batchOpts are the header fields of a hand-built batch that tests vary.
type batchOpts struct {
	baseTimestamp int64
}

// encodeBatch builds a RecordBatch v2 (magic 2), uncompressed, without a
// producer id, holding recs; the CRC-32C is correct.
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
//	magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 |
//	baseTimestamp int64 | maxTimestamp int64 | producerId int64 |
//	producerEpoch int16 | baseSequence int32 | recordCount int32 | records
func encodeBatch(o batchOpts, recs []rec) []byte {
	b := make([]byte, 0, 128)
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0) // batchLength, set below
	b = binary.BigEndian.AppendUint32(b, 0) // partitionLeaderEpoch
	b = append(b, 2)
	b = binary.BigEndian.AppendUint32(b, 0) // crc, set below
	b = binary.BigEndian.AppendUint16(b, 0) // attributes: none, CreateTime
	b = binary.BigEndian.AppendUint32(b, uint32(len(recs)-1))
	b = binary.BigEndian.AppendUint64(b, uint64(o.baseTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(o.baseTimestamp))
	b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // producerId -1
	b = binary.BigEndian.AppendUint16(b, ^uint16(0)) // producerEpoch -1
	b = binary.BigEndian.AppendUint32(b, ^uint32(0)) // baseSequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(recs)))
	for i, r := range recs {
		var body []byte
		body = append(body, 0) // record attributes
		body = binary.AppendVarint(body, 0)
		body = binary.AppendVarint(body, int64(i))
		body = appendVarBytes(body, r.Key)
		body = appendVarBytes(body, r.Value)
		body = binary.AppendVarint(body, int64(len(r.Headers)))
		for _, h := range r.Headers {
			body = appendVarBytes(body, []byte(h.Key))
			body = appendVarBytes(body, []byte(h.Value))
		}
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// rawProduce sends one batch to topic/partition with acks=all and returns
// the partition's response.
func rawProduce(t *testing.T, rc *rawConn, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	// v3 is the first with RecordBatch v2; v12 the last that names topics.
	req.Version = rc.version(t, 0, 3, 12)
	req.Acks = -1
	req.TimeoutMillis = int32(opTimeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.roundTrip(req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %d topics", len(pr.Topics))
	}
	return pr.Topics[0].Partitions[0]
}
