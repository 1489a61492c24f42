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
	// ErrClosed: the coordinator stopped (its partition moved or the agent
	// stops); the client should look for the coordinator again.
	ErrClosed = errors.New("group: coordinator closed")
)
