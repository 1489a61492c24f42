package txn

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Record versions of __transaction_state (Kafka's schemas). Version 0
// is what every Kafka version reads; a transaction of transaction
// version 2 is written at value version 1, whose tagged fields carry
// what a failover coordinator needs to end it as the client expects
// (ClientTransactionVersion, PreviousProducerId, NextProducerId), as
// Kafka 4.x writes it.
const (
	keyVersion     = 0
	valueVersion   = 0
	valueVersionV2 = 1
)

// transactionVersion2 is ClientTransactionVersion of a transaction
// following KIP-890 part 2 (Kafka's TV_2).
const transactionVersion2 = 2

// State is a transaction's state, numbered as Kafka's TransactionState.
type State = kmsg.TransactionState

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Metadata is what the coordinator keeps for one transactional id.
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Timeout         time.Duration
	State           State
	Partitions      []TopicPartition // sorted, no duplicates
	LastUpdate      time.Time
	Start           time.Time // when the open transaction began
	// TV2: the transaction follows transaction version 2 (KIP-890 part
	// 2): its end bumps the producer epoch (Kafka's
	// ClientTransactionVersion).
	TV2 bool
	// NextProducerID is the producer id a prepared TV2 transaction whose
	// epoch is exhausted hands its producer on completion (-1: none).
	NextProducerID int64
	// PrevProducerID is the producer id the last exhausted epoch retired
	// (-1: none): a retried EndTxn naming it succeeds.
	PrevProducerID int64
}

// record encodes m.
func record(m *Metadata) batch.Record {
	key := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: m.TransactionalID}
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch = valueVersion, m.ProducerID, m.ProducerEpoch
	if m.TV2 || m.NextProducerID >= 0 || m.PrevProducerID >= 0 {
		v.Version, v.NextProducerID, v.PreviousProducerID = valueVersionV2, m.NextProducerID, m.PrevProducerID
		if m.TV2 {
			v.ClientTransactionVersion = transactionVersion2
		}
	}
	v.TimeoutMillis, v.State = int32(m.Timeout.Milliseconds()), m.State
	v.LastUpdateTimestamp, v.StartTimestamp = m.LastUpdate.UnixMilli(), -1
	if !m.Start.IsZero() {
		v.StartTimestamp = m.Start.UnixMilli()
	}
	for _, tp := range m.Partitions {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		v.Topics = append(v.Topics, t)
	}
	return batch.Record{Key: key.AppendTo(nil), Value: v.AppendTo(nil)}
}

// tombstone encodes the end of transactional id id.
func tombstone(id string) batch.Record {
	key := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: id}
	return batch.Record{Key: key.AppendTo(nil)}
}

// buildBatch encodes one record as an uncompressed batch.
func buildBatch(r batch.Record, now time.Time) ([]byte, error) {
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = now.UnixMilli()
	return batch.Build(opts, []batch.Record{r})
}

// decodeRecord reads one record of the partition; a tombstone comes back
// with a nil Metadata and the id.
func decodeRecord(r batch.Record) (id string, m *Metadata, err error) {
	var key kmsg.TxnMetadataKey
	if err := key.ReadFrom(r.Key); err != nil {
		return "", nil, fmt.Errorf("transaction log key: %w", err)
	}
	if key.Version != keyVersion {
		return "", nil, fmt.Errorf("transaction log key version %d", key.Version)
	}
	if r.Value == nil {
		return key.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "", nil, fmt.Errorf("transaction log value of %q: %w", key.TransactionalID, err)
	}
	if v.State > kmsg.TransactionStateCompleteAbort || v.State < 0 {
		return "", nil, fmt.Errorf("transaction log value of %q: state %d", key.TransactionalID, v.State)
	}
	m = &Metadata{TransactionalID: key.TransactionalID, ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch,
		Timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, State: v.State, LastUpdate: time.UnixMilli(v.LastUpdateTimestamp),
		TV2: v.ClientTransactionVersion >= transactionVersion2, NextProducerID: v.NextProducerID, PrevProducerID: v.PreviousProducerID}
	if v.StartTimestamp >= 0 {
		m.Start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions = append(m.Partitions, TopicPartition{t.Topic, p})
		}
	}
	sortPartitions(m.Partitions)
	return key.TransactionalID, m, nil
}

func sortPartitions(ps []TopicPartition) []TopicPartition {
	slices.SortFunc(ps, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return slices.Compact(ps)
}
