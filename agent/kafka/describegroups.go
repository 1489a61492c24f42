package kafka

// DescribeGroups (key 15), versions 0-5.
//
// An unknown group is answered with state Dead and no error, as Kafka does.
// Member metadata is shown from CompletingRebalance on and assignments once
// Stable. A KIP-848 group is described too, in the classic consumer form
// (protocol type "consumer", its server assignor as the protocol, member
// metadata and assignments in the consumer protocol's encoding), so tools
// that only know DescribeGroups, such as lag reports, show it; Apache Kafka
// answers GROUP_ID_NOT_FOUND for such groups. AuthorizedOperations (v3+) reports every group operation: there
// are no ACLs. Version 6 (error messages, KIP-1043) is not served.
//
// Authorization (authorize.go): DESCRIBE on each GROUP, else
// GROUP_AUTHORIZATION_FAILED. Unlike Kafka, the authorized operations
// reported are all a group has, whatever the ACLs allow.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allGroupOperations is the bit set of READ, DESCRIBE and DELETE
// (Kafka's AclOperation codes 3, 8 and 6).
const allGroupOperations = 1<<3 | 1<<8 | 1<<6

func handleDescribeGroups(ctx context.Context, s *Server, r *request, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range req.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group = name
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
		}
		c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationDescribe, name)
		if err != nil {
			g.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		d, _, err := c.Describe(name)
		if err != nil {
			g.ErrorCode = errorCode(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.State, g.ProtocolType, g.Protocol = d.State, d.ProtocolType, d.Protocol
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.ClientID, gm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = nonNil(m.Metadata), nonNil(m.Assignment)
			if m.InstanceID != "" {
				gm.InstanceID = strptr(m.InstanceID)
			}
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
