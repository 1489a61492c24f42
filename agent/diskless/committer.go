package diskless

import (
	"context"
	"errors"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// This file is the writer's vocabulary with its callers: the errors
// that answer a batch, and the Committer seam with what it is given.

var (
	// ErrDraining refuses a batch because the agent drains: the batch is
	// in no object, so the client may send it elsewhere at once
	// (NOT_LEADER_OR_FOLLOWER).
	ErrDraining = errors.New("diskless: agent is draining")
	// ErrClosed answers a batch the writer stopped before its outcome was
	// known: it may or may not have been committed.
	ErrClosed = errors.New("diskless: writer closed")
	// ErrCommitTimeout answers the batches of an object whose commit was
	// not done within the commit timeout of its cut. The commit may have
	// landed; an idempotent retry of a batch that did is a duplicate.
	ErrCommitTimeout = errors.New("diskless: commit not done within the commit timeout")
	// ErrUpload answers the batches of an object that could not be stored
	// (KAFKA_STORAGE_ERROR); the error wraps the store's last one.
	ErrUpload = errors.New("diskless: object upload failed")
)

// Placed is one batch of an uploaded object as the committer needs it.
type Placed struct {
	TopicID   [16]byte
	Partition int32
	Position  int64 // in the object's data section
	Size      int32
	Header    batch.Header
}

// Object is an uploaded object to commit.
type Object struct {
	ID     sharedobj.ID
	CutMs  int64 // the header's cut time, unix ms
	Header sharedobj.Header
	// Batches are those to commit, in the object's data order: by run,
	// and within a partition in the order Add took them. The batches
	// whose waiter gave up before the first commit request are left out
	// (their bytes in the object are dead); every retry of the commit
	// carries the same list.
	Batches []Placed
}

// Result is one batch's outcome.
type Result struct {
	BaseOffset int64
	Duplicate  bool  // an idempotent retry answered with its original offsets
	Err        error // the coordinator's refusal of this batch (e.g. out of order sequence)
}

// Committer has objects' batches committed by their coordinators.
type Committer interface {
	// Commit has the object's batches committed and returns one Result
	// per obj.Batches entry, in order. An error means no outcome is known
	// for any batch: the writer calls Commit again with the same object,
	// which the coordinators answer from what they stored, until ctx's
	// deadline (the object's cut plus the commit timeout). The writer
	// calls Commit for one object at a time, in cut order; obj and its
	// slices are the committer's to read, not to change, until it returns.
	Commit(ctx context.Context, obj Object) ([]Result, error)
}
