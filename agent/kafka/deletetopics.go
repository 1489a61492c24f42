package kafka

// DeleteTopics (key 20), versions 1-6. Version 6 may name topics by id.

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
	for _, tg := range targets {
		dt := kmsg.NewDeleteTopicsResponseTopic()
		dt.Topic, dt.TopicID = tg.name, tg.id
		var t *Topic
		var ok bool
		if tg.name != nil && *tg.name != "" {
			t, ok = s.backend.Topic(*tg.name)
		} else {
			t, ok = s.backend.TopicByID(tg.id)
		}
		switch {
		case !ok && tg.name == nil:
			dt.ErrorCode = kerr.UnknownTopicID.Code
		case !ok:
			dt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case t.Internal:
			dt.ErrorCode = kerr.InvalidRequest.Code
			dt.ErrorMessage = strptr("internal topic " + t.Name + " cannot be deleted")
		default:
			dt.Topic, dt.TopicID = strptr(t.Name), t.ID
			if err := s.backend.DeleteTopic(ctx, t.Name); err != nil {
				dt.ErrorCode = errorCode(err)
				dt.ErrorMessage = errorMessage(err)
			}
		}
		resp.Topics = append(resp.Topics, dt)
	}
	return resp, nil
}
