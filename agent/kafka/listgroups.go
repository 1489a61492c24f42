package kafka

// ListGroups (key 16), versions 0-5.
//
// Lists the groups of every coordinator loaded on this agent, with their
// type: "classic" or "consumer" (KIP-848), Empty ones included: as in
// Kafka a group stays, Empty, after its last member leaves, until the
// offsets cleanup removes it. StatesFilter (v4+) and
// TypesFilter (v5+) are applied, case-insensitively.
//
// Authorization (authorize.go): DESCRIBE on the CLUSTER lists every group;
// without it, only the groups the principal may DESCRIBE, as in Kafka.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleListGroups(ctx context.Context, s *Server, r *request, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	everyGroup := s.authorizedCluster(r, kmsg.ACLOperationDescribe)
	for _, c := range s.groups.GroupCoordinators() {
		for _, l := range c.List() {
			if !everyGroup && !s.authorizedGroup(r, kmsg.ACLOperationDescribe, l.Group) {
				continue
			}
			state := l.State
			if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(f string) bool { return strings.EqualFold(f, state) }) {
				continue
			}
			if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(f string) bool { return strings.EqualFold(f, l.Type) }) {
				continue
			}
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = l.Group, l.ProtocolType, state, l.Type
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp, nil
}
