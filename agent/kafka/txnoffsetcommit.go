package kafka

// TxnOffsetCommit (key 28), versions 0-5: a transactional producer
// commits a group's offsets inside its transaction. The group coordinator
// writes them at once and holds them pending (agent/group/txnoffsets.go):
// OffsetFetch shows them only after the transaction's commit marker
// reaches the group's partition, and answers UNSTABLE_OFFSET_COMMIT for
// them meanwhile when asked with require_stable. A member id and
// generation (v3+) are checked as OffsetCommit's when the generation is
// not -1.
//
// Versions 0-4 need AddOffsetsToTxn first; the producer id and epoch are
// not checked against the transaction coordinator here: the marker
// decides them, and a fenced producer's EndTxn fails (Kafka 4.x verifies
// v4 as part 1 does for Produce; Strata does not). Version 5 is
// transaction version 2 (KIP-890 part 2): the group coordinator's agent
// adds the group's __consumer_offsets partition to the transaction itself
// before writing (AddPartitionsToTxn v5 to the transaction coordinator,
// as Produce v12 does, txnverify.go), so the client sends no
// AddOffsetsToTxn, as with Kafka 4.x. A fenced producer then gets
// INVALID_PRODUCER_EPOCH; a transaction coordinator that is busy ending
// the previous transaction or unreachable gets COORDINATOR_NOT_AVAILABLE,
// which clients retry, as Kafka's group coordinator answers.
//
// Authorization (authorize.go): WRITE on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the GROUP
// (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions), on every partition.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleTxnOffsetCommit(ctx context.Context, s *Server, r *request, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	commit := group.TxnCommit{Group: req.Group, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
		MemberID: req.MemberID, Generation: -1, Offsets: map[group.TopicPartition]group.Offset{}}
	if r.version >= 3 {
		commit.Generation = req.Generation
		if req.InstanceID != nil {
			commit.InstanceID = *req.InstanceID
		}
	}
	code := int16(0)
	switch {
	case !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case !s.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	}
	perPartition := map[group.TopicPartition]int16{}
	for _, t := range req.Topics {
		readable := code == 0 && s.authorizedTopic(r, kmsg.ACLOperationRead, t.Topic)
		for _, p := range t.Partitions {
			tp := group.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			switch {
			case code != 0:
			case !readable:
				perPartition[tp] = kerr.TopicAuthorizationFailed.Code
			case p.Metadata != nil && len(*p.Metadata) > maxCommitMetadataBytes:
				perPartition[tp] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := group.Offset{Offset: p.Offset, LeaderEpoch: -1}
				if r.version >= 2 {
					o.LeaderEpoch = p.LeaderEpoch
				}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				commit.Offsets[tp] = o
			}
		}
	}
	if code == 0 && len(commit.Offsets) > 0 {
		c, err := s.groups.GroupCoordinator(ctx, req.Group)
		if err == nil && r.version >= 5 {
			err = s.addOffsetsPartition(ctx, req)
		}
		if err == nil {
			err = c.CommitTxnOffsets(ctx, commit)
		}
		code = errorCode(err)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			if c, ok := perPartition[group.TopicPartition{Topic: t.Topic, Partition: p.Partition}]; ok {
				rp.ErrorCode = c
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// addOffsetsPartition adds the group's __consumer_offsets partition to
// the producer's transaction (TxnOffsetCommit v5, transaction version 2)
// and returns the error TxnOffsetCommit answers when it fails.
func (s *Server) addOffsetsPartition(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) error {
	index, err := s.txns.GroupOffsetsPartition(ctx, req.Group)
	if err == nil {
		err = s.txns.VerifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offsetsTopicName, index, true)
	}
	if err == nil {
		return nil
	}
	err = verifyError(err)
	if errors.Is(err, kerr.NotEnoughReplicas) {
		return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	}
	return err
}
