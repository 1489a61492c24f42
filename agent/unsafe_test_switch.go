package agent

import "os"

// unsafeAckBeforeReplication, set by STRATA_TEST_UNSAFE_ACK=1 in the
// agent's environment, makes a leader answer acks=all produces right after
// its local append, without waiting for the in-sync replicas. It breaks
// DESIGN.md §11 on purpose and exists only so that the chaos checker
// (internal/chaos) can prove it catches lost acknowledged writes; nothing
// else may set it.
var unsafeAckBeforeReplication = os.Getenv("STRATA_TEST_UNSAFE_ACK") == "1"
