package kafka

// CreatePartitions (key 37), versions 0-3.
//
// Count is the topic's new total and must exceed the current one
// (INVALID_PARTITIONS otherwise). An explicit Assignment is checked as Kafka
// checks it — one entry per new partition, each with the topic's replication
// factor, no agent twice, every agent live — and INVALID_REPLICA_ASSIGNMENT
// names the first problem. Unlike Kafka, a valid assignment is advisory:
// the new partitions are placed by Strata's placement, which the balancer
// may change later, because replica location is Strata's decision, not the
// client's. timeout_ms is honoured as CreateTopics honours it
// (topicchanges.go): adding partitions opens a log per new local
// partition, and a change still going on at the deadline is answered
// REQUEST_TIMED_OUT and carries on. A topic named twice in one request gets
// INVALID_REQUEST for each mention, as in Kafka.
//
// Authorization (authorize.go): ALTER on each topic, else
// TOPIC_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreatePartitions(_ context.Context, s *Server, r *request, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	var changes []topicChange
	var slots []int
	for _, rt := range req.Topics {
		ct := kmsg.NewCreatePartitionsResponseTopic()
		ct.Topic = rt.Topic
		if seen[rt.Topic] > 1 {
			ct.ErrorCode = kerr.InvalidRequest.Code
			ct.ErrorMessage = strptr("topic " + rt.Topic + " appears more than once in the request")
		} else if !s.authorizedTopic(r, kmsg.ACLOperationAlter, rt.Topic) {
			ct.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else {
			changes = append(changes, topicChange{topic: rt.Topic, do: func(ctx context.Context) error {
				return s.createPartitions(ctx, rt, req.ValidateOnly)
			}})
			slots = append(slots, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, ct)
	}
	for i, err := range s.runTopicChanges(req.TimeoutMillis, changes) {
		if err != nil {
			ct := &resp.Topics[slots[i]]
			ct.ErrorCode, ct.ErrorMessage = errorCode(err), errorMessage(err)
		}
	}
	return resp, nil
}

func (s *Server) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	t, ok := s.topics.Topic(rt.Topic)
	if !ok {
		return reqErrorf(kerr.UnknownTopicOrPartition, "topic %s does not exist", rt.Topic)
	}
	switch {
	case rt.Count == t.PartitionCount:
		return reqErrorf(kerr.InvalidPartitions, "topic %s already has %d partitions", rt.Topic, t.PartitionCount)
	case rt.Count < t.PartitionCount:
		return reqErrorf(kerr.InvalidPartitions, "topic %s has %d partitions, more than the requested %d; partitions cannot be removed", rt.Topic, t.PartitionCount, rt.Count)
	}
	if rt.Assignment != nil {
		if err := s.checkNewAssignment(t, rt); err != nil {
			return err
		}
	}
	return s.topicAdmin.CreatePartitions(ctx, rt.Topic, rt.Count, validateOnly)
}

// checkNewAssignment validates an explicit assignment of the partitions
// being added.
func (s *Server) checkNewAssignment(t *Topic, rt kmsg.CreatePartitionsRequestTopic) error {
	added := rt.Count - t.PartitionCount
	if int64(len(rt.Assignment)) != int64(added) {
		return reqErrorf(kerr.InvalidReplicaAssignment, "adding %d partitions but %d assignments given", added, len(rt.Assignment))
	}
	live := map[int32]bool{}
	for _, b := range s.cluster.Brokers() {
		live[b.ID] = true
	}
	for i, a := range rt.Assignment {
		partition := t.PartitionCount + int32(i)
		if len(a.Replicas) != int(t.ReplicationFactor) {
			return reqErrorf(kerr.InvalidReplicaAssignment, "partition %d has %d replicas but the topic's replication factor is %d", partition, len(a.Replicas), t.ReplicationFactor)
		}
		dup := make(map[int32]bool, len(a.Replicas))
		for _, id := range a.Replicas {
			if !live[id] {
				return reqErrorf(kerr.InvalidReplicaAssignment, "partition %d names agent %d, which is not live", partition, id)
			}
			if dup[id] {
				return reqErrorf(kerr.InvalidReplicaAssignment, "partition %d names agent %d twice", partition, id)
			}
			dup[id] = true
		}
	}
	return nil
}
