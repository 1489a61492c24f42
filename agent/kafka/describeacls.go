package kafka

// DescribeAcls (key 29), v1-3 (Kafka 4 dropped v0): the entries a filter
// selects, grouped by resource pattern, from the agent's in-memory copy
// (so an entry created through another agent shows once this one has
// re-read the store, within --reconcile-interval or at once on gossip).
//
// Checks: DESCRIBE on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED). Without
// --authorizer it answers SECURITY_DISABLED, as Kafka does without
// authorizer.class.name; a filter acl.Filter.Validate refuses answers
// INVALID_REQUEST with its message.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

// noAuthorizer is Kafka's message for SECURITY_DISABLED.
const noAuthorizer = "No Authorizer is configured: start the agents with --authorizer acl."

// aclAPIRefusal is what the three ACL APIs answer before looking at their
// request: SECURITY_DISABLED without an authorizer, and
// CLUSTER_AUTHORIZATION_FAILED when the principal may not do op on the
// CLUSTER; nil when the request may go on.
func aclAPIRefusal(s *Server, r *request, op kmsg.ACLOperation) (*kerr.Error, *string) {
	switch {
	case !s.authz.AuthorizerEnabled():
		return kerr.SecurityDisabled, strptr(noAuthorizer)
	case !s.authorizedCluster(r, op):
		return kerr.ClusterAuthorizationFailed, nil
	}
	return nil, nil
}

func handleDescribeACLs(ctx context.Context, s *Server, r *request, req *kmsg.DescribeACLsRequest) (*kmsg.DescribeACLsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if code, msg := aclAPIRefusal(s, r, kmsg.ACLOperationDescribe); code != nil {
		resp.ErrorCode, resp.ErrorMessage = code.Code, msg
		return resp, nil
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strptr(err.Error())
		return resp, nil
	}
	type pattern struct {
		typ  kmsg.ACLResourceType
		name string
		pat  kmsg.ACLResourcePatternType
	}
	index := map[pattern]int{}
	for _, e := range s.authz.DescribeACLs(f) {
		p := pattern{e.ResourceType, e.ResourceName, e.PatternType}
		i, ok := index[p]
		if !ok {
			i = len(resp.Resources)
			index[p] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = p.typ, p.name, p.pat
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = e.Principal, e.Host, e.Operation, e.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}
