package kafka

// Group APIs: the coordinator lookup and committed offsets. Each key lives
// in its own file, whose header lists the versions served and how Strata
// differs from Apache Kafka; this file registers them.
//
// The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// DescribeGroups, ListGroups) and KIP-848 are not served yet, so only
// commits from outside a group generation are accepted (generation -1, as
// consumers that assign partitions themselves send them).

func registerGroups() {
	register(8, 2, 9, typed(handleOffsetCommit))
	register(9, 1, 9, typed(handleOffsetFetch))
	register(10, 0, 5, typed(handleFindCoordinator))
	register(42, 0, 2, typed(handleDeleteGroups))
	register(47, 0, 0, typed(handleOffsetDelete))
}
