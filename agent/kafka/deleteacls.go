package kafka

// DeleteAcls (key 31), v1-3 (Kafka 4 dropped v0): every entry any valid
// filter selects is removed in one write to the store; each filter's
// result lists the entries it matched. A filter acl.Filter.Validate
// refuses answers INVALID_REQUEST with its message.
//
// Checks: ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED). Without
// --authorizer every result is SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

func handleDeleteACLs(ctx context.Context, s *Server, r *request, req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	if code, msg := aclAPIRefusal(s, r, kmsg.ACLOperationAlter); code != nil {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code.Code, msg
		}
		return resp, nil
	}
	var valid []acl.Filter
	var validAt []int
	for i, f := range req.Filters {
		af := acl.Filter{ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType}
		if err := af.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, strptr(err.Error())
			continue
		}
		valid, validAt = append(valid, af), append(validAt, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	deleted, err := s.authz.DeleteACLs(ctx, valid)
	if err != nil {
		s.logger.Warn("delete ACLs", "err", err)
		for _, i := range validAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = errorCode(err), strptr(err.Error())
		}
		return resp, nil
	}
	for j, i := range validAt {
		for _, e := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = e.ResourceType, e.ResourceName, e.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = e.Principal, e.Host, e.Operation, e.Permission
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	return resp, nil
}
