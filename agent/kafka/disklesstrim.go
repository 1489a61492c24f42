package kafka

// DisklessTrim (Strata-private key 32004), version 0: the agent that
// received a DeleteRecords for a diskless partition asks the partition's
// batch coordinator, here, to raise its log start (docs/design.md §7a,
// Retention, DeleteRecords). An offset above the high watermark is
// OFFSET_OUT_OF_RANGE; NOT_COORDINATOR when the coordinator is led
// elsewhere.
//
// Authorization: CLUSTER_ACTION on the CLUSTER (the receiving agent
// checked the client's DELETE on the topic). Never advertised in
// ApiVersions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/disklesswire"
)

func handleDisklessTrim(ctx context.Context, s *Server, r *request, req *disklesswire.TrimRequest) (*disklesswire.TrimResponse, error) {
	resp := req.ResponseKind().(*disklesswire.TrimResponse)
	resp.LogStart = -1
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	c, k, err := s.disklessCoordinator(ctx, req.TopicID, req.Partition)
	if err == nil {
		resp.LogStart, err = c.DeleteRecords(ctx, k, req.Offset)
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
