package txn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/peer"
)

// routerHost is agent 1, whose coordinator (when set) coordinates every
// transactional id that coordLeader says it leads; leaders places the
// other partitions.
type routerHost struct {
	coordLeader int32
	coord       *Coordinator
	leaders     map[TopicPartition]int32
	addrErr     error
	markerErr   error

	mu      sync.Mutex
	written []TopicPartition // local markers, in no order
}

func (h *routerHost) AgentID() int32 { return 1 }
func (h *routerHost) CoordinatorLeader(context.Context, string) (int32, error) {
	return h.coordLeader, nil
}
func (h *routerHost) Coordinator(context.Context, string) (*Coordinator, error) {
	if h.coord == nil {
		return nil, dataplane.ErrNotCoordinator
	}
	return h.coord, nil
}
func (h *routerHost) PartitionLeader(topic string, partition int32) (int32, bool) {
	l, ok := h.leaders[TopicPartition{topic, partition}]
	return l, ok
}
func (h *routerHost) AgentAddr(_ context.Context, id int32) (string, error) {
	return fmt.Sprintf("agent-%d:9092", id), h.addrErr
}
func (h *routerHost) WriteMarker(_ context.Context, topic string, partition int32, _ int64, _ int16, _ bool, _ int32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.written = append(h.written, TopicPartition{topic, partition})
	return h.markerErr
}

// routerPeers answers every request to another agent with err, without
// sending it; it records the agents asked.
type routerPeers struct {
	err   error
	mu    sync.Mutex
	asked []string
}

func (p *routerPeers) Do(_ context.Context, id int32, addr string, _ func(*peer.Client) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, fmt.Sprintf("%d@%s", id, addr))
	return p.err
}

// TestRouterVerifiesLocally: a coordinator on this agent is asked
// directly: a partition in the transaction is verified, one that is not
// is ErrInvalidTxnState, and an add puts it in.
func TestRouterVerifiesLocally(t *testing.T) {
	f := newFixture(t)
	pid, epoch, err := f.init("t1", -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	peers := &routerPeers{}
	r := NewRouter(&routerHost{coordLeader: 1, coord: f.c}, peers)
	if err := r.VerifyTxn(ctx, "t1", pid, epoch, "a", 0, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("a partition not in the transaction: %v, want ErrInvalidTxnState", err)
	}
	if err := r.VerifyTxn(ctx, "t1", pid, epoch, "a", 0, true); err != nil {
		t.Fatalf("add: %v", err)
	}
	if err := r.VerifyTxn(ctx, "t1", pid, epoch, "a", 0, false); err != nil {
		t.Fatalf("once added: %v, want verified", err)
	}
	if len(peers.asked) != 0 {
		t.Fatalf("a local coordinator was asked over the network: %v", peers.asked)
	}
	if err := NewRouter(&routerHost{coordLeader: 1}, peers).VerifyTxn(ctx, "t1", pid, epoch, "a", 0, false); !errors.Is(err, dataplane.ErrNotCoordinator) {
		t.Fatalf("no coordinator loaded here: %v, want the host's error", err)
	}
}

// TestRouterVerifiesRemotely: another agent's coordinator is asked over
// the pool; its answer (a Kafka error code) comes back as is, while a
// connection that fails, or an agent without an address, is
// COORDINATOR_NOT_AVAILABLE, which the producer retries.
func TestRouterVerifiesRemotely(t *testing.T) {
	for _, tc := range []struct {
		name    string
		addrErr error
		doErr   error
		want    error
	}{
		{"verified", nil, nil, nil},
		{"the coordinator's answer", nil, kerr.InvalidTxnState, kerr.InvalidTxnState},
		{"connection failed", nil, errors.New("connection reset"), dataplane.ErrCoordinatorNotAvailable},
		{"no address", errors.New("not in gossip"), nil, dataplane.ErrCoordinatorNotAvailable},
	} {
		peers := &routerPeers{err: tc.doErr}
		err := NewRouter(&routerHost{coordLeader: 2, addrErr: tc.addrErr}, peers).VerifyTxn(ctx, "t1", 7, 0, "a", 0, false)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == kerr.InvalidTxnState && errors.Is(err, dataplane.ErrCoordinatorNotAvailable) {
			t.Errorf("%s: the coordinator's answer became COORDINATOR_NOT_AVAILABLE: %v", tc.name, err)
		}
		if tc.addrErr == nil && !slices.Equal(peers.asked, []string{"2@agent-2:9092"}) {
			t.Errorf("%s: asked %v, want agent 2 once", tc.name, peers.asked)
		}
	}
}

// TestRouterWritesMarkers: the partitions led here are marked directly,
// each other leader gets one request, a deleted partition is skipped,
// and every failure is reported.
func TestRouterWritesMarkers(t *testing.T) {
	parts := []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}, {"c", 0}, {"gone", 0}}
	host := &routerHost{leaders: map[TopicPartition]int32{{"a", 0}: 1, {"b", 0}: 1, {"a", 1}: 2, {"c", 0}: 2}}
	peers := &routerPeers{}
	r := NewRouter(host, peers)
	if err := r.WriteMarkers(ctx, 7, 0, true, 3, parts); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(host.written, func(x, y TopicPartition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	if want := []TopicPartition{{"a", 0}, {"b", 0}}; !slices.Equal(host.written, want) {
		t.Fatalf("marked here: %v, want %v", host.written, want)
	}
	if !slices.Equal(peers.asked, []string{"2@agent-2:9092"}) {
		t.Fatalf("asked %v, want agent 2 once for both of its partitions", peers.asked)
	}

	host.written, host.markerErr = nil, errors.New("disk full")
	peers = &routerPeers{err: kerr.NotLeaderForPartition}
	err := NewRouter(host, peers).WriteMarkers(ctx, 7, 0, true, 3, parts)
	if !errors.Is(err, host.markerErr) || !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("failures: %v, want the local and the remote one", err)
	}
}
