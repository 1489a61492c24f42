package kafka

import (
	"context"
	"errors"

	"github.com/strata-streaming/strata/agent/log"
)

// errNotModelled answers a fake's data path that its tests do not use.
var errNotModelled = errors.New("kafka test: not modelled by this fake")

// inertPartition is every Partition method answered as an empty replica
// that leads nothing: zero offsets and no records for reads, and
// errNotModelled from writes and from the follower side. A test's partition fake
// embeds it and defines only the methods its handlers call, so a fake stays
// the size of what it models and a request reaching further (the fuzz
// test's) gets an error code rather than a nil dereference.
type inertPartition struct{}

var _ Partition = inertPartition{}

func (inertPartition) Index() int32       { return 0 }
func (inertPartition) Leader() int32      { return -1 }
func (inertPartition) LeaderEpoch() int32 { return -1 }
func (inertPartition) Replicas() []int32  { return nil }
func (inertPartition) ISR() []int32       { return nil }
func (inertPartition) Local() bool        { return false }

func (inertPartition) Read(context.Context, int64, int, bool) ([]byte, error) {
	return nil, nil
}
func (inertPartition) ReadsFromStore(int64) bool     { return false }
func (inertPartition) HighWatermark() int64          { return 0 }
func (inertPartition) LastStableOffset() int64       { return 0 }
func (inertPartition) Producers() []log.ProducerInfo { return nil }
func (inertPartition) AbortedTransactions(context.Context, int64, int64) ([]log.AbortedTxn, error) {
	return nil, nil
}
func (inertPartition) LogStartOffset() int64      { return 0 }
func (inertPartition) LocalLogStartOffset() int64 { return 0 }
func (inertPartition) HighestTieredOffset() int64 { return -1 }
func (inertPartition) LogEndOffset() int64        { return 0 }
func (inertPartition) Size() int64                { return 0 }
func (inertPartition) FindByTimestamp(context.Context, int64) ([]byte, error) {
	return nil, nil
}
func (inertPartition) MaxTimestampBatch() ([]byte, error)       { return nil, nil }
func (inertPartition) WatchData(chan<- struct{})                {}
func (inertPartition) UnwatchData(chan<- struct{})              {}
func (inertPartition) DecompressionChecks() DecompressionChecks { return nil }

func (inertPartition) Append([]byte, int16) (log.AppendResult, AppendWait, error) {
	return log.AppendResult{}, nil, errNotModelled
}
func (inertPartition) AppendTransactional(context.Context, []byte, int16, *string, bool, VerifyTxn) (log.AppendResult, AppendWait, error) {
	return log.AppendResult{}, nil, errNotModelled
}
func (inertPartition) DeleteRecordsBefore(context.Context, int64) error { return errNotModelled }

func (inertPartition) OffsetForLeaderEpoch(int32, int32) (int32, int64, error) {
	return -1, -1, errNotModelled
}
func (inertPartition) ReplicaRead(int32, int32, int64, int, bool) (ReplicaReadResult, error) {
	return ReplicaReadResult{HighWatermark: -1, LogStartOffset: -1}, errNotModelled
}
