package kafka

// DeleteGroups (key 42), versions 0-2.
//
// Deletes a group's state and committed offsets. A group with no state is
// GROUP_ID_NOT_FOUND and one with members NON_EMPTY_GROUP, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteGroups(ctx context.Context, s *Server, r *request, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = name
		c, err := s.backend.GroupCoordinator(ctx, name)
		if err == nil {
			err = c.DeleteGroup(ctx, name)
		}
		g.ErrorCode = errorCode(err)
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
