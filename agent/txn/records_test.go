package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

func TestRecordRoundTrip(t *testing.T) {
	m := Metadata{TransactionalID: "tx", ProducerID: 7, ProducerEpoch: 3, Timeout: 90 * time.Second,
		State: kmsg.TransactionStateOngoing, Partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}},
		LastUpdate: time.UnixMilli(1000), Start: time.UnixMilli(900)}
	id, got, err := decodeRecord(record(&m))
	if err != nil || id != "tx" || got == nil {
		t.Fatalf("decode: %q %+v %v", id, got, err)
	}
	if got.ProducerID != 7 || got.ProducerEpoch != 3 || got.Timeout != m.Timeout || got.State != m.State ||
		!got.LastUpdate.Equal(m.LastUpdate) || !got.Start.Equal(m.Start) || len(got.Partitions) != 3 ||
		got.Partitions[1] != (TopicPartition{"a", 2}) {
		t.Fatalf("decoded %+v, want %+v", got, m)
	}
}

// FuzzDecodeRecord: records read back from __transaction_state (disk or
// bucket) never panic the coordinator, whatever their bytes.
func FuzzDecodeRecord(f *testing.F) {
	m := Metadata{TransactionalID: "tx", ProducerID: 1, State: kmsg.TransactionStatePrepareCommit,
		Partitions: []TopicPartition{{"t", 0}}, LastUpdate: time.UnixMilli(1)}
	r := record(&m)
	f.Add(r.Key, r.Value)
	f.Add(r.Key, []byte(nil))
	f.Add([]byte{0, 0}, []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, got, err := decodeRecord(batch.Record{Key: key, Value: value})
		if err == nil && got != nil && (got.TransactionalID != id || got.State > kmsg.TransactionStateCompleteAbort) {
			t.Fatalf("decoded %q as %+v", id, got)
		}
	})
}
