package kafka

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSplicedMatchesEncoding: a Fetch answer written around its
// record batches is byte for byte the answer encoded whole, for
// non-flexible and flexible versions, several topics and partitions, and
// partitions without records between ones with them.
func TestFetchSplicedMatchesEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	records := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	for _, version := range []int16{4, 11, 12, 16} {
		resp := kmsg.NewPtrFetchResponse()
		for ti, sizes := range [][]int{{70 << 10, 0, 300}, {0}, {5, 200 << 10}} {
			ft := kmsg.NewFetchResponseTopic()
			ft.Topic = string(rune('a' + ti))
			for pi, n := range sizes {
				fp := kmsg.NewFetchResponseTopicPartition()
				fp.Partition, fp.HighWatermark = int32(pi), int64(n)
				fp.RecordBatches = records(n)
				ft.Partitions = append(ft.Partitions, fp)
			}
			resp.Topics = append(resp.Topics, ft)
		}
		resp.SetVersion(version)
		header := []byte{0, 0, 0, 0, 0, 0, 0, 7}
		if resp.IsFlexible() {
			header = append(header, 0)
		}
		// The same answer, encoded whole.
		want := resp.AppendTo(bytes.Clone(header))

		var spliced bytes.Buffer
		if ok, err := writeFetchSpliced(&spliced, header, version, resp); !ok || err != nil {
			t.Fatalf("v%d: not spliced (%v)", version, err)
		}
		if again := resp.AppendTo(bytes.Clone(header)); !bytes.Equal(again, want) {
			t.Fatalf("v%d: splicing changed the answer it was given", version)
		}
		want[0], want[1], want[2], want[3] = byte((len(want)-4)>>24), byte((len(want)-4)>>16), byte((len(want)-4)>>8), byte(len(want)-4)
		if !bytes.Equal(spliced.Bytes(), want) {
			t.Fatalf("v%d: spliced answer of %d bytes differs from the %d-byte encoding", version, spliced.Len(), len(want))
		}
		if ok, _ := writeFetchSpliced(&bytes.Buffer{}, []byte{0, 0, 0, 0, 0, 0, 0, 7}, version, kmsg.NewPtrFetchResponse()); ok {
			t.Fatalf("v%d: an answer without records was spliced", version)
		}
	}
}
