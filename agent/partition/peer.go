package partition

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
)

// Peer is a partition of which this agent holds no replica. Its
// leader, epoch, replicas and ISR come from the store, so Metadata shows
// where it lives; every data request gets NOT_LEADER_OR_FOLLOWER, and the
// client goes to the leader.
type Peer struct {
	index int32
	st    atomic.Pointer[metadata.PartitionState]
}

// NewPeer is partition index, held elsewhere, in state st.
func NewPeer(index int32, st metadata.PartitionState) *Peer {
	p := &Peer{index: index}
	p.st.Store(&st)
	return p
}

// State is the last state recorded.
func (p *Peer) State() metadata.PartitionState { return *p.st.Load() }

// SetState records a state read from the store unless it is older.
func (p *Peer) SetState(st metadata.PartitionState) {
	for {
		cur := p.st.Load()
		if st.StateEpoch < cur.StateEpoch || p.st.CompareAndSwap(cur, &st) {
			return
		}
	}
}

var _ dataplane.Partition = (*Peer)(nil)

func (p *Peer) notHere() error {
	return fmt.Errorf("%w: partition %d is on agents %v", dataplane.ErrNotLeader, p.index, p.State().Replicas)
}

func (p *Peer) Index() int32       { return p.index }
func (p *Peer) Leader() int32      { return p.State().Leader }
func (p *Peer) LeaderEpoch() int32 { return p.State().LeaderEpoch }
func (p *Peer) Replicas() []int32  { return slices.Clone(p.State().Replicas) }
func (p *Peer) ISR() []int32       { return slices.Clone(p.State().ISR) }
func (p *Peer) Append([]byte, int16) (log.AppendResult, dataplane.AppendWait, error) {
	return log.AppendResult{}, nil, p.notHere()
}
func (p *Peer) AppendTransactional(context.Context, []byte, int16, *string, bool, dataplane.VerifyTxn) (log.AppendResult, dataplane.AppendWait, error) {
	return log.AppendResult{}, nil, p.notHere()
}
func (p *Peer) Read(context.Context, int64, int, bool) ([]byte, error) {
	return nil, p.notHere()
}
func (p *Peer) Local() bool                                        { return false }
func (p *Peer) ReadsFromStore(int64) bool                          { return false }
func (p *Peer) DecompressionChecks() dataplane.DecompressionChecks { return nil }
func (p *Peer) HighWatermark() int64                               { return -1 }
func (p *Peer) LastStableOffset() int64                            { return -1 }
func (p *Peer) Producers() []log.ProducerInfo                      { return nil }
func (p *Peer) AbortedTransactions(context.Context, int64, int64) ([]log.AbortedTxn, error) {
	return nil, p.notHere()
}
func (p *Peer) LogStartOffset() int64              { return -1 }
func (p *Peer) LocalLogStartOffset() int64         { return -1 }
func (p *Peer) HighestTieredOffset() int64         { return -1 }
func (p *Peer) LogEndOffset() int64                { return -1 }
func (p *Peer) Size() int64                        { return 0 }
func (p *Peer) MaxTimestampBatch() ([]byte, error) { return nil, p.notHere() }
func (p *Peer) FindByTimestamp(context.Context, int64) ([]byte, error) {
	return nil, p.notHere()
}

// WatchData wakes nothing: requests for a peer partition fail at once.
func (p *Peer) WatchData(chan<- struct{})   {}
func (p *Peer) UnwatchData(chan<- struct{}) {}

func (p *Peer) OffsetForLeaderEpoch(int32, int32) (int32, int64, error) {
	return -1, -1, p.notHere()
}
func (p *Peer) ReplicaRead(int32, int32, int64, int, bool) (dataplane.ReplicaReadResult, error) {
	return dataplane.ReplicaReadResult{HighWatermark: -1, LogStartOffset: -1}, p.notHere()
}
func (p *Peer) DeleteRecordsBefore(context.Context, int64) error {
	return p.notHere()
}

// StateOf is the applied state of a local replica or a peer.
func StateOf(p dataplane.Partition) metadata.PartitionState {
	switch p := p.(type) {
	case *Partition:
		st, _ := p.StateAndETag()
		return st
	case *Peer:
		return p.State()
	}
	return metadata.PartitionState{}
}
