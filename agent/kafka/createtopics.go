package kafka

// CreateTopics (key 19), versions 2-7.
//
// A manual ReplicaAssignment is accepted when every replica is a live agent
// and no partition names one twice; placement then follows the assignment's
// shape (partition count and replication factor). A topic named twice in one
// request gets INVALID_REQUEST for each mention, as in Kafka. Creates that
// outlast timeout_ms are answered REQUEST_TIMED_OUT and go on
// (topicchanges.go); unlike Kafka, a timeout_ms of 0 or less waits for them.
//
// Authorization (authorize.go): CREATE on the CLUSTER or on each topic, else
// TOPIC_AUTHORIZATION_FAILED. Unlike Kafka, the configs of a created topic
// are returned without a DESCRIBE_CONFIGS check.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

func handleCreateTopics(ctx context.Context, s *Server, r *request, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// The topics that pass the checks below are created after the loop,
	// all together: changes[i] creates the topic at position slots[i] of
	// the request and sets created[slots[i]].
	var (
		changes []topicChange
		slots   []int
		created = make([]*Topic, len(req.Topics))
	)
	for j, rt := range req.Topics {
		ct := kmsg.NewCreateTopicsResponseTopic()
		ct.Topic = rt.Topic
		ct.NumPartitions, ct.ReplicationFactor = -1, -1
		if seen[rt.Topic] > 1 {
			ct.ErrorCode = kerr.InvalidRequest.Code
			ct.ErrorMessage = strptr("topic " + rt.Topic + " appears more than once in the request")
			resp.Topics = append(resp.Topics, ct)
			continue
		}
		if !s.authorizedCreateTopic(r, rt.Topic) {
			ct.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, ct)
			continue
		}
		partitions, rf := rt.NumPartitions, rt.ReplicationFactor
		if len(rt.ReplicaAssignment) > 0 {
			if partitions != -1 || rf != -1 {
				ct.ErrorCode = kerr.InvalidRequest.Code
				ct.ErrorMessage = strptr("both a replica assignment and a partition count or replication factor were given")
				resp.Topics = append(resp.Topics, ct)
				continue
			}
			var err error
			partitions, rf, err = s.checkAssignment(rt.ReplicaAssignment)
			if err != nil {
				ct.ErrorCode = kerr.InvalidReplicaAssignment.Code
				ct.ErrorMessage = errorMessage(err)
				resp.Topics = append(resp.Topics, ct)
				continue
			}
		}
		configs := map[string]string{}
		for _, c := range rt.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		name := rt.Topic
		changes = append(changes, topicChange{topic: name, do: func(ctx context.Context) (err error) {
			created[j], err = s.topicAdmin.CreateTopic(ctx, name, partitions, rf, configs, req.ValidateOnly)
			return err
		}})
		slots = append(slots, j)
		resp.Topics = append(resp.Topics, ct)
	}
	for i, err := range s.runTopicChanges(req.TimeoutMillis, changes) {
		ct := &resp.Topics[slots[i]]
		if err != nil {
			ct.ErrorCode = errorCode(err)
			ct.ErrorMessage = errorMessage(err)
			continue
		}
		t := created[slots[i]]
		ct.TopicID = t.ID
		ct.NumPartitions, ct.ReplicationFactor = t.PartitionCount, t.ReplicationFactor
		for _, e := range metadata.Describe(t.Configs, s.topics.TopicConfigDefaults()) {
			cc := kmsg.NewCreateTopicsResponseTopicConfig()
			cc.Name = e.Name
			v := e.Value
			cc.Value = &v
			cc.Source = int8(e.Source)
			ct.Configs = append(ct.Configs, cc)
		}
	}
	return resp, nil
}

func (s *Server) checkAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) (int32, int16, error) {
	live := map[int32]bool{}
	for _, b := range s.cluster.Brokers() {
		live[b.ID] = true
	}
	rf := len(as[0].Replicas)
	for i, a := range as {
		if a.Partition != int32(i) {
			return 0, 0, errf("replica assignment partitions must be 0..%d in order", len(as)-1)
		}
		if len(a.Replicas) != rf || rf == 0 {
			return 0, 0, errf("partition %d has %d replicas; every partition needs the same non-zero count", i, len(a.Replicas))
		}
		dup := map[int32]bool{}
		for _, id := range a.Replicas {
			if !live[id] {
				return 0, 0, errf("partition %d names agent %d, which is not live", i, id)
			}
			if dup[id] {
				return 0, 0, errf("partition %d names agent %d twice", i, id)
			}
			dup[id] = true
		}
	}
	return int32(len(as)), int16(rf), nil
}
