package kafka

// DescribeCluster (key 60), versions 0-1.
//
// Strata has no controller: cluster metadata lives in the object store and
// every agent changes it with conditional writes. ControllerID is therefore
// the id of the agent answering, so admin tools that send controller
// requests to "the controller" send them to an agent that serves them.
// Brokers are the live agents that gossip knows, each at its endpoint for
// the listener the client connected on. EndpointType (v1) must be
// 1 (brokers); 2 (controllers) and anything else is UNSUPPORTED_ENDPOINT_TYPE,
// since there are no controller endpoints. When authorized operations are
// requested every cluster operation is reported as allowed, whatever the
// ACLs say (unlike Kafka); when not requested the field is Kafka's
// "omitted" value.
//
// Authorization: none, as on Kafka's brokers (only its controllers ask
// for ALTER on the CLUSTER).
//
// Version 2 (KIP-1073: IncludeFencedBrokers, IsFenced) is not served:
// answering it truthfully needs the registered-but-not-live agents, which
// the Cluster backend does not expose.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's AclOperation codes that apply to the CLUSTER resource; all of
// them are allowed because Strata has no authorizer.
const (
	aclCreate          = 5
	aclAlter           = 7
	aclDescribe        = 8
	aclClusterAction   = 9
	aclDescribeConfigs = 10
	aclAlterConfigs    = 11
	aclIdempotentWrite = 12
)

const (
	endpointTypeBrokers = 1
	// authorizedOperationsOmitted is INT32_MIN, Kafka's value for "not
	// requested".
	authorizedOperationsOmitted int32 = -2147483648
)

func clusterOperations() int32 {
	var ops int32
	for _, op := range []uint{aclCreate, aclAlter, aclDescribe, aclClusterAction, aclDescribeConfigs, aclAlterConfigs, aclIdempotentWrite} {
		ops |= 1 << op
	}
	return ops
}

func handleDescribeCluster(ctx context.Context, s *Server, r *request, req *kmsg.DescribeClusterRequest) (*kmsg.DescribeClusterResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	resp.ClusterAuthorizedOperations = authorizedOperationsOmitted
	if r.version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = strptr("only endpoint type 1 (brokers) is served; Strata has no controller endpoints")
		return resp, nil
	}
	resp.ClusterID = s.cluster.ClusterID()
	resp.ControllerID = s.cluster.AgentID()
	for _, b := range s.cluster.Brokers() {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.Host, rb.Port = b.Address(r.listenerName())
		rb.NodeID, rb.Rack = b.ID, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations()
	}
	return resp, nil
}
