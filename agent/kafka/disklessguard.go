package kafka

// DisklessGuard (Strata-private key 32002), version 0: an agent that
// received a transactional batch for a diskless partition asks the
// partition's batch coordinator, here, to stand a verification guard for
// the producer at its epoch (KIP-890), before it verifies the batch with
// the transaction coordinator and buffers it (docs/design.md §7a,
// Transactions). A marker of the producer removes the guard, so a batch
// verified before the transaction ended cannot open it again. Errors:
// NOT_COORDINATOR when the coordinator is led elsewhere,
// UNKNOWN_TOPIC_OR_PARTITION for a partition no diskless topic has.
//
// Authorization: CLUSTER_ACTION on the CLUSTER. Never advertised in
// ApiVersions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/disklesswire"
)

func handleDisklessGuard(ctx context.Context, s *Server, r *request, req *disklesswire.GuardRequest) (*disklesswire.GuardResponse, error) {
	resp := req.ResponseKind().(*disklesswire.GuardResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	c, k, err := s.disklessCoordinator(ctx, req.TopicID, req.Partition)
	if err == nil {
		err = c.Guard(k, req.ProducerID, req.ProducerEpoch)
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
