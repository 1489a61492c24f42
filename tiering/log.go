package tiering

import "io"

// Segment describes a sealed segment of a partition log.
type Segment struct {
	Base, Next   int64 // offsets [Base, Next)
	Size         int64
	MaxTimestamp int64 // -1 without timestamps
	LeaderEpoch  int32 // the epoch at Next-1, -1 if unknown
}

// SegmentView is a pinned sealed segment: its batches, its indexes in
// Kafka's layout (.index: 8-byte entries of relative offset and position;
// .timeindex: 12-byte entries of timestamp and relative offset), its
// transaction index (internal/txnindex; nil when it aborted nothing) and
// the producer snapshot taken when it was sealed (nil if none).
type SegmentView struct {
	Segment
	Log                    io.ReaderAt
	OffsetIndex, TimeIndex []byte
	TxnIndex               []byte
	ProducerSnapshot       []byte
	Release                func()
}

// Log is what tiering needs of a partition log; the agent adapts
// agent/log's Log to it (tiering does not import the agent's packages).
type Log interface {
	SealedSegments(from int64) []Segment
	OpenSealed(base int64) (*SegmentView, error)
	// SetRemoteEnd tells the log that offsets below end are in the
	// manifest, so local retention may delete them.
	SetRemoteEnd(end int64)
	// RestartAt makes an empty log continue at offset, with the producer
	// snapshot taken there if there is one.
	RestartAt(offset int64, producerSnapshot []byte) error
	LogStartOffset() int64
	LogEndOffset() int64
	Size() int64
	// DeleteRecordsBefore raises the local log start (remote retention and
	// DeleteRecords reaching into local data).
	DeleteRecordsBefore(offset int64) error
}
