package agent

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
)

// peerPartition is a partition of which this agent holds no replica. Its
// leader, epoch, replicas and ISR come from the store, so Metadata shows
// where it lives; every data request gets NOT_LEADER_OR_FOLLOWER, and the
// client goes to the leader.
type peerPartition struct {
	index int32
	st    atomic.Pointer[metadata.PartitionState]
}

func newPeerPartition(index int32, st metadata.PartitionState) *peerPartition {
	p := &peerPartition{index: index}
	p.st.Store(&st)
	return p
}

func (p *peerPartition) state() metadata.PartitionState { return *p.st.Load() }

// setState records a state read from the store unless it is older.
func (p *peerPartition) setState(st metadata.PartitionState) {
	for {
		cur := p.st.Load()
		if st.StateEpoch < cur.StateEpoch || p.st.CompareAndSwap(cur, &st) {
			return
		}
	}
}

var _ kafka.Partition = (*peerPartition)(nil)

func (p *peerPartition) notHere() error {
	return fmt.Errorf("%w: partition %d is on agents %v", kafka.ErrNotLeader, p.index, p.state().Replicas)
}

func (p *peerPartition) Index() int32       { return p.index }
func (p *peerPartition) Leader() int32      { return p.state().Leader }
func (p *peerPartition) LeaderEpoch() int32 { return p.state().LeaderEpoch }
func (p *peerPartition) Replicas() []int32  { return slices.Clone(p.state().Replicas) }
func (p *peerPartition) ISR() []int32       { return slices.Clone(p.state().ISR) }
func (p *peerPartition) Append([]byte, int16) (log.AppendResult, kafka.AppendWait, error) {
	return log.AppendResult{}, nil, p.notHere()
}
func (p *peerPartition) Read(context.Context, int64, int, bool) ([]byte, error) {
	return nil, p.notHere()
}
func (p *peerPartition) Local() bool                        { return false }
func (p *peerPartition) ReadsFromStore(int64) bool          { return false }
func (p *peerPartition) HighWatermark() int64               { return -1 }
func (p *peerPartition) LogStartOffset() int64              { return -1 }
func (p *peerPartition) LocalLogStartOffset() int64         { return -1 }
func (p *peerPartition) HighestTieredOffset() int64         { return -1 }
func (p *peerPartition) LogEndOffset() int64                { return -1 }
func (p *peerPartition) Size() int64                        { return 0 }
func (p *peerPartition) MaxTimestampBatch() ([]byte, error) { return nil, p.notHere() }
func (p *peerPartition) FindByTimestamp(context.Context, int64) ([]byte, error) {
	return nil, p.notHere()
}

// DataSignal never fires: requests for a peer partition fail at once.
func (p *peerPartition) DataSignal() <-chan struct{} { return nil }

func (p *peerPartition) OffsetForLeaderEpoch(int32, int32) (int32, int64, error) {
	return -1, -1, p.notHere()
}
func (p *peerPartition) ReplicaRead(int32, int32, int64, int) (kafka.ReplicaReadResult, error) {
	return kafka.ReplicaReadResult{HighWatermark: -1, LogStartOffset: -1}, p.notHere()
}
func (p *peerPartition) DeleteRecordsBefore(context.Context, int64) error {
	return p.notHere()
}
