package txn

import "errors"

// Errors, each one Kafka error code at the protocol boundary.
var (
	// ErrClosed: the coordinator was unloaded (NOT_COORDINATOR).
	ErrClosed = errors.New("txn: coordinator closed")
	// ErrConcurrentTransactions: the transaction is being completed
	// (CONCURRENT_TRANSACTIONS); the client retries.
	ErrConcurrentTransactions = errors.New("txn: transaction is being completed")
	// ErrProducerFenced: a newer producer with the same transactional id
	// has the epoch (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH to clients
	// of older versions).
	ErrProducerFenced = errors.New("txn: producer fenced by a newer epoch")
	// ErrInvalidProducerIDMapping: the producer id is not the one of this
	// transactional id (INVALID_PRODUCER_ID_MAPPING).
	ErrInvalidProducerIDMapping = errors.New("txn: producer id does not match the transactional id")
	// ErrInvalidTxnState: the request does not fit the transaction's state
	// (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("txn: invalid transaction state")
	// ErrInvalidTimeout: transaction.timeout.ms out of range
	// (INVALID_TRANSACTION_TIMEOUT).
	ErrInvalidTimeout = errors.New("txn: invalid transaction timeout")
	// ErrInvalidTransactionalID: an empty transactional id.
	ErrInvalidTransactionalID = errors.New("txn: invalid transactional id")
)
