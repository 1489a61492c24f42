package group

import "errors"

// Errors a Coordinator returns; the Kafka handlers map each to its code.
var (
	// ErrIllegalGeneration: a commit names a generation the group is not at.
	ErrIllegalGeneration = errors.New("group: illegal generation")
	// ErrUnknownMember: the member id is not in the group.
	ErrUnknownMember = errors.New("group: unknown member id")
	// ErrGroupNotFound: DeleteGroups of a group that has no state.
	ErrGroupNotFound = errors.New("group: group id not found")
	// ErrNotEmpty: DeleteGroups of a group that still has members.
	ErrNotEmpty = errors.New("group: group is not empty")
	// ErrInvalidGroupID: the empty group id.
	ErrInvalidGroupID = errors.New("group: invalid group id")
	// ErrLoading: the coordinator is still replaying its partition.
	ErrLoading = errors.New("group: coordinator is loading")
	// ErrMemberIDRequired: a new member got its id and must join again
	// with it (KIP-394).
	ErrMemberIDRequired = errors.New("group: member id required")
	// ErrRebalanceInProgress: the group is rebalancing; rejoin.
	ErrRebalanceInProgress = errors.New("group: rebalance in progress")
	// ErrInconsistentProtocol: the member's protocol type or assignors do
	// not match the group's.
	ErrInconsistentProtocol = errors.New("group: inconsistent group protocol")
	// ErrInvalidSessionTimeout: a session timeout outside the allowed range.
	ErrInvalidSessionTimeout = errors.New("group: invalid session timeout")
	// ErrFencedInstanceID: a static member whose instance id now belongs
	// to a newer member id.
	ErrFencedInstanceID = errors.New("group: fenced instance id")
	// ErrSubscribedToTopic: OffsetDelete of a topic a member subscribes to.
	ErrSubscribedToTopic = errors.New("group: group is subscribed to the topic")
	// ErrInvalidRequest: a request that breaks the protocol's rules.
	ErrInvalidRequest = errors.New("group: invalid request")
	// ErrFencedMemberEpoch: a KIP-848 member's epoch is not the one the
	// coordinator holds; it must give up its partitions and rejoin.
	ErrFencedMemberEpoch = errors.New("group: fenced member epoch")
	// ErrStaleMemberEpoch: a commit or offset fetch with an old member
	// epoch; the member learns the new one from its next heartbeat.
	ErrStaleMemberEpoch = errors.New("group: stale member epoch")
	// ErrUnreleasedInstanceID: a static member joined while the member
	// holding its instance id has not left.
	ErrUnreleasedInstanceID = errors.New("group: unreleased instance id")
	// ErrUnsupportedAssignor: a server assignor this coordinator lacks.
	ErrUnsupportedAssignor = errors.New("group: unsupported assignor")
	// ErrInvalidRegex: a subscription regex that does not compile.
	ErrInvalidRegex = errors.New("group: invalid regular expression")
	// ErrClosed: the coordinator stopped (its partition moved or the agent
	// stops); the client should look for the coordinator again.
	ErrClosed = errors.New("group: coordinator closed")
)
