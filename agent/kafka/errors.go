package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/diskless"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/agent/txn"
)

// errorCode maps a Go error from the agent's packages to the Kafka error code
// a client expects. This is the only place where that translation happens.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var e *kerr.Error
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, ErrUnknownTopicOrPartition), errors.Is(err, metadata.ErrUnknownTopic), errors.Is(err, metadata.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, ErrNotLeader), errors.Is(err, replica.ErrNotLeader), errors.Is(err, replica.ErrNotReplica):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, replica.ErrBelowLocalStart):
		return kerr.OffsetMovedToTieredStorage.Code
	case errors.Is(err, ErrNotCoordinator), errors.Is(err, group.ErrClosed), errors.Is(err, batchcoord.ErrClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, batchcoord.ErrAppend):
		// Retriable, and unlike NOT_COORDINATOR not a sign that nothing
		// was written (agent/diskless/route.go).
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, batchcoord.ErrCommitTooOld), errors.Is(err, diskless.ErrCommitTimeout):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, diskless.ErrDraining), errors.Is(err, diskless.ErrClosed), errors.Is(err, batchcoord.ErrNoGuard):
		// Nothing of the batch was committed: the client sends it to
		// another agent.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, diskless.ErrCoordinatorUnreachable):
		// Nothing of the batch was committed, and this agent is still the
		// right one to send it to: the client may retry here.
		// NOT_LEADER_OR_FOLLOWER would tell it to look for another
		// leader, which Metadata would not name.
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, diskless.ErrGuard):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, diskless.ErrUpload):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, batchcoord.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, batchcoord.ErrControlBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, ErrCoordinatorNotAvailable):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, group.ErrLoading):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, group.ErrIllegalGeneration):
		return kerr.IllegalGeneration.Code
	case errors.Is(err, group.ErrUnknownMember):
		return kerr.UnknownMemberID.Code
	case errors.Is(err, group.ErrGroupNotFound):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, group.ErrNotEmpty):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, group.ErrMemberIDRequired):
		return kerr.MemberIDRequired.Code
	case errors.Is(err, group.ErrRebalanceInProgress):
		return kerr.RebalanceInProgress.Code
	case errors.Is(err, group.ErrInconsistentProtocol):
		return kerr.InconsistentGroupProtocol.Code
	case errors.Is(err, group.ErrInvalidSessionTimeout):
		return kerr.InvalidSessionTimeout.Code
	case errors.Is(err, group.ErrFencedInstanceID):
		return kerr.FencedInstanceID.Code
	case errors.Is(err, group.ErrSubscribedToTopic):
		return kerr.GroupSubscribedToTopic.Code
	case errors.Is(err, group.ErrInvalidGroupID):
		return kerr.InvalidGroupID.Code
	case errors.Is(err, group.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, group.ErrFencedMemberEpoch):
		return kerr.FencedMemberEpoch.Code
	case errors.Is(err, group.ErrStaleMemberEpoch):
		return kerr.StaleMemberEpoch.Code
	case errors.Is(err, group.ErrUnreleasedInstanceID):
		return kerr.UnreleasedInstanceID.Code
	case errors.Is(err, group.ErrUnsupportedAssignor):
		return kerr.UnsupportedAssignor.Code
	case errors.Is(err, group.ErrInvalidRegex):
		return kerr.InvalidRegularExpression.Code
	case errors.Is(err, ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, metadata.ErrNoReassignment):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, metadata.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, metadata.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, metadata.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, metadata.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrInvalidTxnState), errors.Is(err, txn.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, log.ErrCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, txn.ErrClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, txn.ErrConcurrentTransactions):
		return kerr.ConcurrentTransactions.Code
	case errors.Is(err, txn.ErrProducerFenced):
		return kerr.ProducerFenced.Code
	case errors.Is(err, txn.ErrInvalidProducerIDMapping):
		return kerr.InvalidProducerIDMapping.Code
	case errors.Is(err, txn.ErrInvalidTimeout):
		return kerr.InvalidTransactionTimeout.Code
	case errors.Is(err, txn.ErrInvalidTransactionalID):
		return kerr.InvalidRequest.Code
	case errors.Is(err, log.ErrStorage), errors.Is(err, log.ErrClosed), errors.Is(err, log.ErrFailed), errors.Is(err, log.ErrTruncated):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, log.ErrBatchTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, batch.ErrMagic):
		return kerr.UnsupportedForMessageFormat.Code
	case errors.Is(err, batch.ErrUnsupportedCodec):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, batch.ErrInvalidTimestamp):
		return kerr.InvalidTimestamp.Code
	case errors.Is(err, batch.ErrInvalidRecord):
		return kerr.InvalidRecord.Code
	case errors.Is(err, batch.ErrCorrupt), errors.Is(err, batch.ErrShort):
		return kerr.CorruptMessage.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the message for response fields that carry one; nil when
// there is no error.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
