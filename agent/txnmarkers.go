package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/txn"
)

// txnMarkers writes a transaction's markers for its coordinator: to the
// partitions led here directly, to the others with WriteTxnMarkers over
// the inter-agent listener (its TLS and SASL, as replication) on the
// agent's pooled connections (a.peers), one request per leader, all
// leaders at once.
type txnMarkers struct{ a *Agent }

var _ txn.Markers = txnMarkers{}

func (m txnMarkers) WriteMarkers(ctx context.Context, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, parts []txn.TopicPartition) error {
	byLeader := map[int32]map[string][]int32{}
	var errs []error
	for _, tp := range parts {
		leader, ok := m.leader(tp)
		if !ok {
			continue
		}
		if byLeader[leader] == nil {
			byLeader[leader] = map[string][]int32{}
		}
		byLeader[leader][tp.Topic] = append(byLeader[leader][tp.Topic], tp.Partition)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, topics := range byLeader {
		wg.Go(func() {
			err := m.send(ctx, leader, peer.TxnMarker{ProducerID: producerID, ProducerEpoch: epoch, Commit: commit,
				CoordinatorEpoch: coordinatorEpoch, Partitions: topics})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// leader is the agent that leads tp as this agent last heard; false for
// a partition that no longer exists (its topic was deleted), which has
// nothing left to mark, as Kafka skips it.
func (m txnMarkers) leader(tp txn.TopicPartition) (int32, bool) {
	e, ok := m.a.entry(tp.Topic)
	if !ok || tp.Partition < 0 || int(tp.Partition) >= len(e.snap.Partitions) {
		return -1, false
	}
	return e.snap.Partitions[tp.Partition].Leader(), true
}

// send writes one leader's markers; the local agent's directly.
func (m txnMarkers) send(ctx context.Context, leader int32, tm peer.TxnMarker) error {
	a := m.a
	if leader == a.id {
		var mu sync.Mutex
		var wg sync.WaitGroup
		var errs []error
		for topic, parts := range tm.Partitions {
			for _, p := range parts {
				wg.Go(func() {
					if err := a.WriteTxnMarker(ctx, topic, p, tm.ProducerID, tm.ProducerEpoch, tm.Commit, tm.CoordinatorEpoch); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s-%d: %w", topic, p, err))
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	addr, err := a.ctl.AgentAddr(ctx, leader)
	if err != nil {
		return err
	}
	err = a.peers.Do(ctx, leader, addr, func(c *peer.Client) error { return c.WriteTxnMarkers(ctx, tm) })
	if err != nil {
		return fmt.Errorf("markers to agent %d: %w", leader, err)
	}
	return nil
}
