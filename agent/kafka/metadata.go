package kafka

// Metadata (key 3), versions 0-13.
//
// Topics are created on first mention when auto-creation is on for the agent
// and the request allows it (v4+; always allowed for v0-3, as in Kafka). A
// topic created this way is returned at once with its partitions instead of
// LEADER_NOT_AVAILABLE, because creation here is synchronous. Internal topics
// (__consumer_offsets) are listed with is_internal set, also in the answer
// for all topics, as in Kafka; clients filter them. A partition whose leader is not
// a live agent (it died and no successor is elected yet) is listed with
// leader -1 and LEADER_NOT_AVAILABLE, and replicas on agents that are not
// live as offline, as Kafka does. ControllerID is this agent's id:
// Strata has no controller, and clients only need some live broker there.
// Each broker's address is its endpoint for the listener the client
// connected on (listener.go), as Kafka answers.
//
// Unlike Kafka, auto-creation is bounded per request and per second
// (autocreate.go): topics past the bounds are answered LEADER_NOT_AVAILABLE
// and created when the client asks again.
//
// Authorization (authorize.go), as Kafka's: a topic the principal may not
// DESCRIBE is left out of the answer for all topics, and answered
// TOPIC_AUTHORIZATION_FAILED when named (by id: with a null name), before
// anything says whether it exists; auto-creation needs CREATE on the
// CLUSTER or the topic, else TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

func handleMetadata(ctx context.Context, s *Server, r *request, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	live := map[int32]bool{}
	brokers := s.cluster.Brokers()
	for _, br := range brokers {
		live[br.ID] = true
		mb := kmsg.NewMetadataResponseBroker()
		mb.Host, mb.Port = br.Address(r.listenerName())
		mb.NodeID, mb.Rack = br.ID, br.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := s.cluster.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = s.cluster.AgentID()

	picker := disklessPicker(s.alive(brokers), s.clientRack(r, brokers))
	all := req.Topics == nil || (r.version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.topics.Topics() {
			if !s.authorizedTopic(r, kmsg.ACLOperationDescribe, t.Name) {
				continue
			}
			resp.Topics = append(resp.Topics, metadataTopic(t, live, picker))
		}
		return resp, nil
	}
	autoCreate := s.topics.AutoCreateTopics() && (r.version < 4 || req.AllowAutoTopicCreation)
	round := autoCreateRound{l: s.autoCreate}
	defer func() {
		s.metrics.autoCreateDeferred(deferredRequest, round.overRequest)
		s.metrics.autoCreateDeferred(deferredRate, round.overRate)
	}()
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		var t *Topic
		var ok bool
		switch {
		case rt.Topic != nil && *rt.Topic != "":
			t, ok = s.topics.Topic(*rt.Topic)
		case rt.TopicID != [16]byte{}:
			t, ok = s.topics.TopicByID(rt.TopicID)
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if denied := metadataDenied(s, r, rt, t, ok, autoCreate); denied != nil {
			resp.Topics = append(resp.Topics, *denied)
			continue
		}
		if !ok && rt.Topic != nil && autoCreate && metadata.ValidateTopicName(*rt.Topic) == nil {
			if !round.admit(time.Now()) {
				// Past a bound (autocreate.go): Kafka's answer for a
				// topic still being created, which clients retry.
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = rt.Topic
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			var err error
			t, err = s.topicAdmin.CreateTopic(ctx, *rt.Topic, -1, -1, nil, false)
			if errors.Is(err, metadata.ErrTopicExists) {
				t, ok = s.topics.Topic(*rt.Topic)
				err = nil
				if !ok {
					err = kerr.LeaderNotAvailable
				}
			}
			if err != nil {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = rt.Topic
				mt.ErrorCode = errorCode(err)
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			ok = true
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic != nil && metadata.ValidateTopicName(*rt.Topic) != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, metadataTopic(t, live, picker))
	}
	return resp, nil
}

// metadataDenied answers a named topic the principal may not describe, or
// not create when the request would auto-create it; nil when allowed.
func metadataDenied(s *Server, r *request, rt kmsg.MetadataRequestTopic, t *Topic, found, autoCreate bool) *kmsg.MetadataResponseTopic {
	name := ""
	switch {
	case found:
		name = t.Name
	case rt.Topic != nil:
		name = *rt.Topic
	default:
		return nil
	}
	allowed := s.authorizedTopic(r, kmsg.ACLOperationDescribe, name)
	if allowed && !found && autoCreate {
		allowed = s.authorizedCreateTopic(r, name)
	}
	if allowed {
		return nil
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
	mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
	return &mt
}

// metadataTopic describes t's partitions; a diskless topic's leader is
// pick's choice (disklessmeta.go), its sole replica and ISR.
func metadataTopic(t *Topic, live map[int32]bool, pick func(topicID [16]byte, partition int32) int32) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = t.Internal
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index()
		mp.Leader = p.Leader()
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = p.Replicas()
		mp.ISR = p.ISR()
		if t.Resolved.Diskless {
			if a := pick(t.ID, p.Index()); a >= 0 {
				mp.Leader, mp.Replicas, mp.ISR = a, []int32{a}, []int32{a}
			}
		}
		for _, r := range mp.Replicas {
			if !live[r] {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if !live[mp.Leader] {
			// Its leader is gone and no successor is elected yet.
			mp.Leader, mp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
