package kafka

// DeleteTopics (key 20), versions 1-6. Version 6 may name topics by id.
// Deletes that outlast timeout_ms are answered REQUEST_TIMED_OUT and go on
// (topicchanges.go); unlike Kafka, a timeout_ms of 0 or less waits for them.
//
// Authorization (authorize.go): DELETE on each topic, else
// TOPIC_AUTHORIZATION_FAILED (checked by name before the topic is looked up;
// a topic id that names no topic is UNKNOWN_TOPIC_ID).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteTopics(ctx context.Context, s *Server, r *request, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if r.version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: strptr(n)})
		}
	}
	// Deletes are made after the loop, all together; changes[i] answers
	// resp.Topics[slots[i]].
	var (
		changes []topicChange
		slots   []int
	)
	for _, tg := range targets {
		dt := kmsg.NewDeleteTopicsResponseTopic()
		dt.Topic, dt.TopicID = tg.name, tg.id
		var t *Topic
		var ok bool
		if tg.name != nil && *tg.name != "" {
			t, ok = s.topics.Topic(*tg.name)
		} else {
			t, ok = s.topics.TopicByID(tg.id)
		}
		switch {
		case s.deniedTopic(r, kmsg.ACLOperationDelete, derefString(tg.name), t, ok, tg.name == nil || *tg.name == ""):
			dt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !ok && tg.name == nil:
			dt.ErrorCode = kerr.UnknownTopicID.Code
		case !ok:
			dt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case t.Internal:
			dt.ErrorCode = kerr.InvalidRequest.Code
			dt.ErrorMessage = strptr("internal topic " + t.Name + " cannot be deleted")
		default:
			dt.Topic, dt.TopicID = strptr(t.Name), t.ID
			name := t.Name
			changes = append(changes, topicChange{topic: name, do: func(ctx context.Context) error {
				return s.topicAdmin.DeleteTopic(ctx, name)
			}})
			slots = append(slots, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, dt)
	}
	for i, err := range s.runTopicChanges(req.TimeoutMillis, changes) {
		if err != nil {
			dt := &resp.Topics[slots[i]]
			dt.ErrorCode = errorCode(err)
			dt.ErrorMessage = errorMessage(err)
		}
	}
	return resp, nil
}
