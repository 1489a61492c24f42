package kafka

// DeleteGroups (key 42), versions 0-2.
//
// Deletes a group's state and committed offsets. As in Kafka, an Empty
// group (its members left; it is kept until the offsets cleanup) is
// deleted, a group with members is NON_EMPTY_GROUP and an unknown one
// GROUP_ID_NOT_FOUND.
//
// Authorization (authorize.go): DELETE on each GROUP, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteGroups(ctx context.Context, s *Server, r *request, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = name
		c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationDelete, name)
		if err == nil {
			err = c.DeleteGroup(ctx, name)
		}
		g.ErrorCode = errorCode(err)
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
