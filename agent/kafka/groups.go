package kafka

// Group APIs: the coordinator lookup, the classic group protocol and
// committed offsets. Each key lives in its own file, whose header lists the
// versions served and how Strata differs from Apache Kafka; this file
// registers them.

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
