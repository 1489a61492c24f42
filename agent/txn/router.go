package txn

// The Router carries what crosses agents for transactions: a partition
// leader's KIP-890 verification to the coordinator of the transactional
// id, and a coordinator's markers to the partitions' leaders. Either end
// may be this agent, which is called directly; another agent is reached
// over its inter-agent listener (its TLS and SASL, as replication) on the
// agent's pooled connections (agent/peer), AddPartitionsToTxn v4 or v5
// for a verification, WriteTxnMarkers for markers.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/peer"
)

// Host is the agent as a Router sees it: who leads what, where agents
// are, and the two local ends. The agent root implements it; every
// method is safe for concurrent use, and what it returns belongs to the
// caller.
type Host interface {
	// AgentID is this agent's id.
	AgentID() int32
	// CoordinatorLeader is the agent that leads the partition of
	// __transaction_state coordinating transactionalID, as this agent
	// last heard, creating the topic on first use; an error wrapping
	// dataplane.ErrCoordinatorNotAvailable when no agent is known to.
	CoordinatorLeader(ctx context.Context, transactionalID string) (int32, error)
	// Coordinator is the coordinator of transactionalID on this agent,
	// loaded on first use; an error (dataplane.ErrNotCoordinator, or
	// ErrClosed) when this agent does not lead its partition.
	Coordinator(ctx context.Context, transactionalID string) (*Coordinator, error)
	// PartitionLeader is the agent that leads topic-partition as this
	// agent last heard; false for a partition that no longer exists (its
	// topic was deleted).
	PartitionLeader(topic string, partition int32) (int32, bool)
	// AgentAddr is another agent's inter-agent address
	// (control.Controller.AgentAddr).
	AgentAddr(ctx context.Context, id int32) (string, error)
	// WriteMarker appends a transaction marker to a partition this agent
	// leads and returns once acks=all holds (on __consumer_offsets it also
	// completes the group's pending transactional offsets).
	WriteMarker(ctx context.Context, topic string, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error
}

// Peers are the pooled connections to the other agents. The agent owns
// them (it closes them after its coordinators); the Router only borrows
// one per request.
type Peers interface {
	// Do runs fn on a connection to agent id at addr (peer.Pool.Do); fn
	// must not keep the client.
	Do(ctx context.Context, id int32, addr string, fn func(*peer.Client) error) error
}

var _ Peers = (*peer.Pool)(nil)

// Router routes verifications to coordinators and markers to partition
// leaders (see the file comment). It keeps no state of its own: every
// method is safe for concurrent use, and it needs no Close.
type Router struct {
	host  Host
	peers Peers
}

var _ Markers = (*Router)(nil)

// NewRouter routes for host over peers.
func NewRouter(host Host, peers Peers) *Router {
	return &Router{host: host, peers: peers}
}

// VerifyTxn asks the coordinator of transactionalID whether the partition
// is in the producer's ongoing transaction (KIP-890 part 1), or with add
// adds it (part 2, transaction version 2): directly when it runs here,
// else with AddPartitionsToTxn v4 or v5. It returns nil if the partition
// is in the transaction, ErrInvalidTxnState if it is not, the
// coordinator's error otherwise; a coordinator that cannot be reached is
// dataplane.ErrCoordinatorNotAvailable, which the producer retries.
func (r *Router) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	leader, err := r.host.CoordinatorLeader(ctx, transactionalID)
	if err != nil {
		return err
	}
	if leader == r.host.AgentID() {
		c, err := r.host.Coordinator(ctx, transactionalID)
		if err != nil {
			return err
		}
		parts := []TopicPartition{{Topic: topic, Partition: partition}}
		if add {
			return c.AddPartitions(ctx, transactionalID, producerID, epoch, parts, true)
		}
		in, err := c.Verify(ctx, transactionalID, producerID, epoch, parts)
		if err != nil {
			return err
		}
		if !in[0] {
			return fmt.Errorf("%w: %s-%d is not in the transaction of %q", ErrInvalidTxnState, topic, partition, transactionalID)
		}
		return nil
	}
	addr, err := r.host.AgentAddr(ctx, leader)
	if err != nil {
		return errors.Join(dataplane.ErrCoordinatorNotAvailable, err)
	}
	err = r.peers.Do(ctx, leader, addr, func(c *peer.Client) error {
		return c.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
	})
	if ke := (*kerr.Error)(nil); err != nil && !errors.As(err, &ke) {
		// The connection failed (or could not be made), not the
		// coordinator: retriable.
		return errors.Join(dataplane.ErrCoordinatorNotAvailable, err)
	}
	return err
}

// WriteMarkers implements Markers: to the partitions led here directly,
// to the others with WriteTxnMarkers, one request per leader, all
// leaders at once. A partition that no longer exists has nothing left to
// mark and is skipped, as Kafka skips it.
func (r *Router) WriteMarkers(ctx context.Context, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, parts []TopicPartition) error {
	byLeader := map[int32]map[string][]int32{}
	for _, tp := range parts {
		leader, ok := r.host.PartitionLeader(tp.Topic, tp.Partition)
		if !ok {
			continue
		}
		if byLeader[leader] == nil {
			byLeader[leader] = map[string][]int32{}
		}
		byLeader[leader][tp.Topic] = append(byLeader[leader][tp.Topic], tp.Partition)
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for leader, topics := range byLeader {
		wg.Go(func() {
			err := r.sendMarkers(ctx, leader, peer.TxnMarker{ProducerID: producerID, ProducerEpoch: epoch, Commit: commit,
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

// sendMarkers writes one leader's markers; this agent's directly, each
// partition at once.
func (r *Router) sendMarkers(ctx context.Context, leader int32, tm peer.TxnMarker) error {
	if leader == r.host.AgentID() {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for topic, parts := range tm.Partitions {
			for _, p := range parts {
				wg.Go(func() {
					if err := r.host.WriteMarker(ctx, topic, p, tm.ProducerID, tm.ProducerEpoch, tm.Commit, tm.CoordinatorEpoch); err != nil {
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
	addr, err := r.host.AgentAddr(ctx, leader)
	if err != nil {
		return err
	}
	err = r.peers.Do(ctx, leader, addr, func(c *peer.Client) error { return c.WriteTxnMarkers(ctx, tm) })
	if err != nil {
		return fmt.Errorf("markers to agent %d: %w", leader, err)
	}
	return nil
}
