package loadgen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/compression"
)

// headerBytes is what the harness writes at the front of every value:
//
//	0       8         16                 RecordBytes
//	+-------+---------+------------------+
//	| sched | seq     | random bytes     |
//	+-------+---------+------------------+
//	sched: the record's scheduled send time, Unix nanoseconds, big endian
//	seq:   producer index << 48 | sequence number within the producer
//
// A consumer on the same machine measures end-to-end latency as its receive
// time minus sched. The random tail is fixed per producer (from the seed):
// it stands for data that does not compress.
const headerBytes = 16

// newPayload returns a random value template for producer p.
func newPayload(size int, seed uint64, p int) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(p)))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// stamp copies template into a new value and writes the header.
func stamp(template []byte, sched time.Time, producer int, seq int64) []byte {
	v := make([]byte, len(template))
	copy(v, template)
	binary.BigEndian.PutUint64(v[0:8], uint64(sched.UnixNano()))
	binary.BigEndian.PutUint64(v[8:16], uint64(producer)<<48|uint64(seq))
	return v
}

// scheduled reads the scheduled send time from a value; ok is false for a
// value too short to hold the header (not written by this harness).
func scheduled(value []byte) (time.Time, bool) {
	if len(value) < headerBytes {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(value[0:8]))), true
}

// sequence reads the producer and sequence number from a value with the
// header: unique per record of a run.
func sequence(value []byte) uint64 { return binary.BigEndian.Uint64(value[8:16]) }

// keyOf is the key of record seq of every producer in a run with a key
// space of keys (Config.Keys): 16 bytes, the big-endian number seq mod
// keys in the last 8. Each producer cycles through the whole space, so
// every key is rewritten once every keys records of a producer: what a
// compacted topic's cleaner works on.
func keyOf(keys int, seq int64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k[8:16], uint64(seq%int64(keys)))
	return k
}

func codec(name string) (kgo.CompressionCodec, error) {
	if c, ok := compression.Parse(name); ok {
		return c, nil
	}
	return kgo.NoCompression(), fmt.Errorf("--compression %q: want %s", name, compression.Names)
}

// producerOpts are the kgo options of one producer client, after base
// (clientOpts).
func producerOpts(cfg Config, base []kgo.Opt, topic string) []kgo.Opt {
	c, _ := codec(cfg.Compression)
	opts := append(slices.Clip(base),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchCompression(c),
		kgo.MaxBufferedRecords(cfg.MaxBufferedRecords),
	)
	switch cfg.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if cfg.Keys == 0 {
		// Without keys, spread batches over partitions in turn rather than
		// sticking to one partition per batch window.
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	return opts
}
