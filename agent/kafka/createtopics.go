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
// The answer is kept to a small multiple of the request, whatever it names
// (Kafka answers every topic with a message): names that are not valid
// topic names are refused with INVALID_TOPIC_EXCEPTION before anything
// else, duplicates are found by sorting rather than in a map, and only the
// first maxErrorMessages failed topics carry an error message; the rest
// carry the code alone (the message is nullable, and clients print the
// code's own text then). A request may name at most --max-topics-per-request
// topics (topiclimit.go).
//
// diskless.enable=true (Strata's, named after KIP-1150) makes a diskless
// topic, whose replication factor (given, or a replica assignment's) is
// accepted and ignored: its partitions have no replicas. It
// is INVALID_CONFIG with cleanup.policy=compact, remote.storage.enable=false
// or local.retention.*, and, until the agents serve diskless topics, at
// all (agent/topics/diskless.go). The answer's configs mark it read-only.
//
// Authorization (authorize.go): CREATE on the CLUSTER or on each topic, else
// TOPIC_AUTHORIZATION_FAILED. Unlike Kafka, the configs of a created topic
// are returned without a DESCRIBE_CONFIGS check.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

func handleCreateTopics(ctx context.Context, s *Server, r *request, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, 0, len(req.Topics))
	repeated := repeatedNames(req.Topics)
	messages := 0
	// fail answers ct with code, and with msg while messages last.
	fail := func(ct kmsg.CreateTopicsResponseTopic, code int16, msg func() *string) {
		ct.ErrorCode = code
		if messages < maxErrorMessages {
			messages++
			ct.ErrorMessage = msg()
		}
		resp.Topics = append(resp.Topics, ct)
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
		if repeated[j] {
			fail(ct, kerr.InvalidRequest.Code, func() *string {
				return strptr("topic " + rt.Topic + " appears more than once in the request")
			})
			continue
		}
		if err := metadata.ValidateTopicName(rt.Topic); err != nil {
			fail(ct, kerr.InvalidTopicException.Code, func() *string { return errorMessage(err) })
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
				fail(ct, kerr.InvalidRequest.Code, func() *string {
					return strptr("both a replica assignment and a partition count or replication factor were given")
				})
				continue
			}
			var err error
			partitions, rf, err = s.checkAssignment(rt.ReplicaAssignment)
			if err != nil {
				fail(ct, kerr.InvalidReplicaAssignment.Code, func() *string { return errorMessage(err) })
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
			if messages < maxErrorMessages {
				messages++
				ct.ErrorMessage = errorMessage(err)
			}
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
			cc.ReadOnly = e.ReadOnly
			ct.Configs = append(ct.Configs, cc)
		}
	}
	return resp, nil
}

// maxErrorMessages is the most topics of one CreateTopics answer that
// carry an error message besides their code.
const maxErrorMessages = 1000

// repeatedNames reports, for each topic of a request, whether another
// topic of the request has the same name. It sorts positions rather than
// counting names in a map: 4 bytes a topic instead of about 50.
func repeatedNames(topics []kmsg.CreateTopicsRequestTopic) []bool {
	order := make([]int32, len(topics))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(topics[a].Topic, topics[b].Topic) })
	repeated := make([]bool, len(topics))
	for i := 1; i < len(order); i++ {
		if topics[order[i]].Topic == topics[order[i-1]].Topic {
			repeated[order[i]], repeated[order[i-1]] = true, true
		}
	}
	return repeated
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
