package kafka

// ElectLeaders (key 43), versions 0-2.
//
// Preferred elections (type 0) make each partition's first replica its
// leader in a new epoch when it is alive and in sync; it then holds every
// committed record, so nothing acknowledged is lost and clients of the old
// leader get NOT_LEADER_OR_FOLLOWER once. ELECTION_NOT_NEEDED when it
// already leads, PREFERRED_LEADER_NOT_AVAILABLE when it cannot. A null
// topic list means every partition. Unclean elections (type 1) are refused
// with INVALID_REQUEST: an agent elects unclean leaders by itself when a
// topic sets unclean.leader.election.enable.
//
// Authorization (authorize.go): ALTER on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED at the top and on every partition named.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleElectLeaders(ctx context.Context, s *Server, r *request, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	clusterDenied := !s.authorizedCluster(r, kmsg.ACLOperationAlter)
	if clusterDenied {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	if req.ElectionType != 0 { // only v1+ carries a type
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	topics := req.Topics
	if topics == nil && !clusterDenied {
		for _, t := range s.topics.Topics() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = t.Name
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, p.Index())
			}
			topics = append(topics, rt)
		}
	}
	for _, rt := range topics {
		et := kmsg.NewElectLeadersResponseTopic()
		et.Topic = rt.Topic
		for _, p := range rt.Partitions {
			ep := kmsg.NewElectLeadersResponseTopicPartition()
			ep.Partition = p
			if clusterDenied {
				ep.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			} else if err := s.reassignments.ElectPreferredLeader(ctx, rt.Topic, p); err != nil {
				ep.ErrorCode, ep.ErrorMessage = errorCode(err), errorMessage(err)
			}
			et.Partitions = append(et.Partitions, ep)
		}
		resp.Topics = append(resp.Topics, et)
	}
	return resp, nil
}
