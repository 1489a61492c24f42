//go:build strata_unsafe_ack

package partition

// unsafeAck, compiled in only with -tags strata_unsafe_ack, makes a
// leader answer acks=all produces right after its local append, without
// waiting for the in-sync replicas. It breaks docs/design.md §11 on purpose and
// exists only so that the chaos checker (internal/chaos) can prove it
// catches lost acknowledged writes, and so that the replication tests can
// be seen to fail without the wait; no release is built with the tag.
const unsafeAck = true
