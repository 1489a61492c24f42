package kafka

// DisklessObjects (Strata-private key 32003), version 0: the orphan
// janitor asks each agent that leads partitions of __diskless_state
// whether their batch coordinators reference commit objects
// (docs/design.md §7a, The orphan janitor). Every coordinator led here
// is loaded and asked; if one cannot be, the answer is an error, and the
// janitor deletes nothing this pass.
//
// Authorization: CLUSTER_ACTION on the CLUSTER. Never advertised in
// ApiVersions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/disklesswire"
)

func handleDisklessObjects(ctx context.Context, s *Server, r *request, req *disklesswire.ObjectsRequest) (*disklesswire.ObjectsResponse, error) {
	resp := req.ResponseKind().(*disklesswire.ObjectsResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	referenced, err := s.diskless.DisklessReferences(ctx, req.IDs)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.Referenced = referenced
	return resp, nil
}
