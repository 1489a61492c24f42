package kafka

// TxnOffsetCommit (key 28), versions 0-4: a transactional producer
// commits a group's offsets inside its transaction. The group coordinator
// writes them at once and holds them pending (agent/group/txnoffsets.go):
// OffsetFetch shows them only after the transaction's commit marker
// reaches the group's partition, and answers UNSTABLE_OFFSET_COMMIT for
// them meanwhile when asked with require_stable. The producer id and
// epoch are not checked against the transaction coordinator here: the
// marker decides them, and a fenced producer's EndTxn fails. A member id
// and generation (v3+) are checked as OffsetCommit's when the generation
// is not -1. PRODUCER_FENCED does not arise here.
//
// Authorization (authorize.go): WRITE on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the GROUP
// (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions), on every partition.

import (
	"context"

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
