// Package membership tells each agent which other agents are alive, where
// they listen and what state they are in, by gossip (hashicorp/memberlist,
// SWIM); see docs/design.md §8. It also carries small broadcasts, "object X is
// now at version V": gossip is a hint and the store is the truth, so a
// receiver re-reads the object and a periodic reconcile repairs whatever a
// broadcast missed.
//
// # Use
//
//	m, err := membership.Start(cfg, membership.Member{ID: 3, KafkaAddr: "10.0.0.3:9092",
//		HTTPAddr: "10.0.0.3:9644", Rack: "a", State: membership.StateJoining})
//	go func() { for e := range m.Events() { ... } }()  // join, leave, fail, update, broadcast, ...
//	m.SetState(ctx, membership.StateActive)
//	m.Broadcast("topics/<id>/0/state.json", version)
//	...
//	m.Leave(ctx) // graceful: the others see EventLeave at once
//	m.Close()    // without Leave, the others see EventFail after failure detection
//
// Start returns once the listener is bound; the --join seeds are joined in
// the background (join.go). A join exchanges the full member list with
// every seed that answers. While an agent is alone its joins are retried
// with backoff, so it starts while the others are down and tries again when
// every other member has failed. Once in a cluster it joins again, a
// JoinRetryMin or so apart, until a join brings no member it did not know:
// agents started all at once, whose first joins are all refused, each
// exchange lists with every seed instead of learning of some members only
// from gossip, which may miss one until the next push/pull (30 s).
//
// # memberlist
//
// The gossip library is hashicorp/memberlist v0.6.0 with one fix, in
// third_party/memberlist (STRATA.md there): the release could drop a gossip
// message that replaced the only one queued, such as this agent's new state
// set while it joined, a relayed alive or suspect message, or a Broadcast.
//
// # Identity
//
// Each Start makes a new memberlist node named agent-<id>-<8 random hex
// digits>, so a restarted agent is a new node: its old incarnation fails on
// its own and is never confused with it. Agent ids themselves are claimed in
// the store (agent/metadata); gossip does not enforce them, but two live
// nodes claiming one id are reported (EventDuplicate and an error log), and
// both stay visible in Members, never merged.
//
// # Concurrency
//
// All methods of Membership may be called concurrently. memberlist's
// callbacks never block: they update the member view, wake the joiner when
// the first other member appears, and append to a bounded queue (Config.EventQueueLimit, updates of one node coalesced,
// overflow reported as EventOverflow) that one goroutine feeds to the Events
// channel. Members() is updated before the event is queued, so it is never
// behind the events a reader has seen.
//
// # Node meta, version 1 (at most MetaMaxBytes = 512 bytes)
//
//	+---------+-------+----------------+--------------------+
//	| version | state | agent id       | started            |
//	| u8 = 1  | u8    | int32 big-end. | uvarint, unix ms   |
//	+---------+-------+----------------+--------------------+
//	| kafka addr          | http addr           | rack                |
//	| uvarint len + bytes | uvarint len + bytes | uvarint len + bytes |
//	+---------------------+---------------------+---------------------+
//
// state is 1 joining, 2 active, 3 draining. Later versions only append
// fields; readers ignore bytes past the fields they know. A node whose meta
// does not decode is kept out of the member list.
//
// # Broadcast and leave intent, version 1 (memberlist user messages)
//
//	+---------+--------+----------------+---------+
//	| version | kind   | sender id      | seq     |
//	| u8 = 1  | u8     | int32 big-end. | uvarint |
//	+---------+--------+----------------+---------+
//	| name len | sender name | key len | key   | payload  |
//	| u8       | bytes       | u8      | bytes | the rest |
//	+----------+-------------+---------+-------+----------+
//
// kind 1 is a broadcast; kind 2, with no key or payload, is the leave
// intent that Leave sends over TCP to each live member before memberlist's
// own leave, because memberlist's NotifyLeave does not tell a leave from a
// failure. (sender name, seq) identifies a message; receivers drop the
// copies that gossip's retransmissions bring.
package membership
