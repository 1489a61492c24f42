// Package placement is where replicas go, in one place: the pure
// functions that the agent and its controller call, with no I/O.
//
//   - Assign lays out a new topic's (or new partitions') replicas
//     round-robin over a list of agents.
//   - Order lists the live agents so that round-robin neighbours sit in
//     different racks.
//   - Place moves existing replica sets towards balance (the balancer's
//     targets, and `strata reassign generate`) by counts of replicas and
//     preferred leaders; PlaceByLoad (load.go) weighs each partition's
//     measured network and disk load first, within a tolerance.
//
// The metadata store only stores what these decide.
package placement
