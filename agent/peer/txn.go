package peer

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// peerWriteTxnMarkersVersion is the WriteTxnMarkers version a
// coordinator sends (flexible); every agent serves it.
const peerWriteTxnMarkersVersion = 1

// TxnMarker is one marker a coordinator asks a partition leader to write.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// Partitions of the transaction this leader leads, by topic.
	Partitions map[string][]int32
}

// WriteTxnMarkers asks the agent at the other end to write m's marker to
// each of its partitions (the coordinator's half of WriteTxnMarkers). The
// error joins every partition's failure; one that moved wraps
// dataplane.ErrNotLeader, so the caller looks its leader up again.
func (c *Client) WriteTxnMarkers(ctx context.Context, m TxnMarker) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = peerWriteTxnMarkersVersion
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for topic, parts := range m.Partitions {
		rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		rt.Topic, rt.Partitions = topic, parts
		rm.Topics = append(rm.Topics, rt)
	}
	req.Markers = append(req.Markers, rm)
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	if err := c.request(ctx, req, resp); err != nil {
		return err
	}
	if len(resp.Markers) != 1 {
		return fmt.Errorf("kafka: peer %s answered WriteTxnMarkers of one marker with %d", c.addr, len(resp.Markers))
	}
	var errs []error
	answered := 0
	for _, t := range resp.Markers[0].Topics {
		for _, p := range t.Partitions {
			answered++
			if p.ErrorCode != 0 {
				errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, peerError(p.ErrorCode, c.addr)))
			}
		}
	}
	want := 0
	for _, parts := range m.Partitions {
		want += len(parts)
	}
	if answered != want {
		errs = append(errs, fmt.Errorf("kafka: peer %s answered WriteTxnMarkers for %d of %d partitions", c.addr, answered, want))
	}
	return errors.Join(errs...)
}

// The AddPartitionsToTxn versions a partition leader sends (the batched
// broker form): 4 with VerifyOnly to verify a transactional produce
// (KIP-890 part 1), 5 without it to add the partition for transaction
// version 2 (part 2), as Kafka 4.x's leaders do.
const (
	peerVerifyTxnVersion = 4
	peerAddTxnVersion    = 5
)

// VerifyTxn asks the transaction coordinator at the other end whether
// topic-partition is in the ongoing transaction of producerID at epoch,
// without adding it, or with add to add it. The partition's error code
// comes back as an error (INVALID_TXN_STATE when it is not in the
// transaction).
func (c *Client) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = peerVerifyTxnVersion
	if add {
		req.Version = peerAddTxnVersion
	}
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = transactionalID, producerID, epoch, !add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	rt.Topics = append(rt.Topics, tt)
	req.Transactions = append(req.Transactions, rt)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if err := c.request(ctx, req, resp); err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return peerError(resp.ErrorCode, c.addr)
	}
	for _, t := range resp.Transactions {
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				if rt.Topic == topic && p.Partition == partition {
					if p.ErrorCode != 0 {
						return peerError(p.ErrorCode, c.addr)
					}
					return nil
				}
			}
		}
	}
	return fmt.Errorf("kafka: peer %s did not answer the verification of %s-%d", c.addr, topic, partition)
}
