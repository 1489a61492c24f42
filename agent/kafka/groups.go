package kafka

// Group APIs: the coordinator lookup, the classic group protocol and
// committed offsets. Each key lives in its own file, whose header lists the
// versions served and how Strata differs from Apache Kafka; this file
// registers them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func registerGroups() {
	register(8, 2, 9, typed(handleOffsetCommit))
	register(9, 1, 9, typed(handleOffsetFetch))
	register(10, 0, 5, typed(handleFindCoordinator))
	register(11, 2, 9, typed(handleJoinGroup))
	register(12, 0, 4, typed(handleHeartbeat))
	register(13, 0, 5, typed(handleLeaveGroup))
	register(14, 0, 5, typed(handleSyncGroup))
	register(15, 0, 5, typed(handleDescribeGroups))
	register(16, 0, 5, typed(handleListGroups))
	register(42, 0, 2, typed(handleDeleteGroups))
	register(47, 0, 0, typed(handleOffsetDelete))
	register(68, 0, 1, typed(handleConsumerGroupHeartbeat))
	register(69, 0, 1, typed(handleConsumerGroupDescribe))
}

// groupCoordinator is the group APIs' prologue: op on the group (else
// GROUP_AUTHORIZATION_FAILED), then the group's coordinator, which must
// run on this agent (else NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
// COORDINATOR_LOAD_IN_PROGRESS); errorCode maps the error to its code.
func (s *Server) groupCoordinator(ctx context.Context, r *request, op kmsg.ACLOperation, groupID string) (*group.Coordinator, error) {
	if !s.authorizedGroup(r, op, groupID) {
		return nil, kerr.GroupAuthorizationFailed
	}
	return s.groups.GroupCoordinator(ctx, groupID)
}
