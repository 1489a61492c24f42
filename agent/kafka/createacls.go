package kafka

// CreateAcls (key 30), v1-3 (Kafka 4 dropped v0): the valid creations are
// stored in one write to the store (acls.json, by CAS) and reach the other
// agents on their next re-read, within --reconcile-interval, or at once
// through the gossip broadcast. Each creation gets its own result: an
// entry acl.Entry.Validate refuses answers INVALID_REQUEST with its
// message and the others are still stored; an entry stored already is
// not stored twice (Kafka's ACLs are a set).
//
// Checks: ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED). Without
// --authorizer every result is SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

func handleCreateACLs(ctx context.Context, s *Server, r *request, req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	if code, msg := aclAPIRefusal(s, r, kmsg.ACLOperationAlter); code != nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code.Code, msg
		}
		return resp, nil
	}
	var valid []acl.Entry
	var validAt []int
	for i, c := range req.Creations {
		e := acl.Entry{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if err := e.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, strptr(err.Error())
			continue
		}
		valid, validAt = append(valid, e), append(validAt, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	if err := s.authz.CreateACLs(ctx, valid); err != nil {
		s.logger.Warn("create ACLs", "err", err)
		for _, i := range validAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), strptr(err.Error())
		}
	}
	return resp, nil
}
