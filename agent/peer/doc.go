// Package peer is the client side of what agents ask each other over the
// inter-agent listener, in the Kafka protocol, with that listener's TLS
// and SASL: a follower's replication requests to its leader (Client:
// Fetch with a replica id, OffsetForLeaderEpoch, ListOffsets), and the
// transaction requests a coordinator and a partition leader send each
// other (WriteTxnMarkers, AddPartitionsToTxn v4-5) over a Pool of
// connections. Answers come back as Go errors (agent/dataplane's,
// agent/replica's and agent/log's sentinels), never as Kafka codes.
//
// The wire server that answers these requests is agent/kafka; this
// package depends on none of its security, group or transaction
// packages, so the data plane (agent/partition) can use it alone.
package peer
