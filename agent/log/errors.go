package log

import (
	"errors"
	"fmt"

	"github.com/strata-streaming/strata/agent/log/producers"
)

var (
	// ErrOffsetOutOfRange is returned by Read for an offset below the log
	// start or above the log end, and by DeleteRecordsBefore above the end.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrOutOfOrderSequence is an idempotent batch whose sequence does not
	// follow the producer's last one.
	ErrOutOfOrderSequence = producers.ErrOutOfOrderSequence
	// ErrInvalidProducerEpoch is a batch or marker from a fenced (older)
	// producer epoch.
	ErrInvalidProducerEpoch = producers.ErrInvalidProducerEpoch
	// ErrInvalidTxnState is a non-transactional batch from a producer
	// whose transaction is open (Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = producers.ErrInvalidTxnState
	// ErrCoordinatorFenced is a marker from an older coordinator epoch than
	// the producer's last marker (TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = producers.ErrCoordinatorFenced
	// ErrClosed is any call after Close.
	ErrClosed = errors.New("log: closed")
	// ErrStorage is matched by every StorageError.
	ErrStorage = errors.New("log: storage error")
	// ErrFailed means an earlier I/O failure left the log unable to undo a
	// partial write; appends are refused until it is reopened, reads go on.
	ErrFailed = errors.New("log: failed for writes after an unrecoverable I/O error")
	// ErrTruncated means the bytes of an append were removed (a failed fsync
	// rolled the log back, or TruncateTo ran) before they became durable.
	ErrTruncated = errors.New("log: append truncated before it was durable")
	// ErrInvalidBatch is an Append argument that is not one whole v2 batch.
	ErrInvalidBatch = errors.New("log: invalid record batch")
	// ErrBatchTooLarge is a batch larger than segment.bytes.
	ErrBatchTooLarge = errors.New("log: batch larger than segment.bytes")
	// ErrInvalidConfig wraps every Config.Validate failure.
	ErrInvalidConfig = errors.New("log: invalid config")
)

// StorageError is an I/O failure of the file system under the log.
// errors.Is(err, ErrStorage) is true for every StorageError, and Unwrap gives
// the underlying error (errors.Is(err, syscall.ENOSPC) works through it).
type StorageError struct {
	Op   string // what the log was doing: "append", "sync", "roll", ...
	Path string // file involved, if any
	Err  error
}

func (e *StorageError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("log: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("log: %s %s: %v", e.Op, e.Path, e.Err)
}

func (e *StorageError) Unwrap() error { return e.Err }

// Is makes every StorageError match ErrStorage.
func (e *StorageError) Is(target error) bool { return target == ErrStorage }

func storageErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	return &StorageError{Op: op, Path: path, Err: err}
}

// CorruptionError describes bytes that recovery cut from the log: the
// segment file, the offset where valid data ended, and why.
type CorruptionError struct {
	Segment string
	Offset  int64
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("log: corrupt segment %s at offset %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
