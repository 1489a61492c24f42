// Package abuse holds tests of one agent process (internal/testagent)
// that ask whether its resources stay bounded; the package has no code of
// its own.
//
// TestProtocolAbuse runs a well-behaved franz-go producer (acks=all,
// idempotent) and consumer throughout, and in phases, one at a time and
// while those clients work, opens connections that send random bytes,
// truncated frames, huge or negative length prefixes, thousands of idle
// connections, and Fetch requests whose answers are never read (or read at
// 1 KiB/s). Each phase must see records acknowledged and read while it
// lasts; afterwards the agent must still answer ApiVersions and Metadata,
// its peak resident memory (VmHWM) must stay under a fixed bound, and its
// goroutines and open files must come back near where they were before.
//
// TestSASLListenerAbuse sends the first three phases to a SASL_PLAINTEXT
// listener, then garbage after a good SaslHandshake (a garbled first SCRAM
// message, another API before authenticating, a frame of random bytes) and
// SaslAuthenticate frames claiming up to 100 MiB; each such connection must
// be closed by the agent, under the same progress and memory checks.
//
// TestSASLListenerAbuse sends the first three phases to a SASL_PLAINTEXT
// listener, then garbage after a good SaslHandshake (a garbled first SCRAM
// message, another API before authenticating, a frame of random bytes) and
// SaslAuthenticate frames claiming up to 100 MiB; each such connection must
// be closed by the agent, under the same progress and memory checks.
//
// TestSoak produces and consumes as fast as the agent takes it for
// STRATA_SOAK_DURATION (20s when unset), samples the agent's resident
// memory, goroutines and open files every second, and requires that none
// of them grows between the middle third and the last third of the run
// by more than a generous margin.
//
// TestUnreadAnswerIsDropped requires that a client which asks for a big
// Fetch answer and never reads it is cut off after --connections-max-idle
// instead of holding the answer's memory for as long as it likes.
//
// TestIdleHTTPKeepAlives holds 2,000 idle keep-alive connections to the
// HTTP port of an agent limited to 2,048 open files, and
// TestKafkaConnectionFlood 10,000 Kafka connections from 127.0.0.2, while
// the good clients keep producing from 127.0.0.1: the agent must keep
// serving them, hold no more than its limits admit, and (HTTP) close what
// it holds after --http-idle-timeout.
//
// TestCreateTopicsFlood and TestMetadataFlood send one CreateTopics of
// about 100 MiB of invalid names, one of a million, and eight Metadata
// requests of a million new names at once, and require a peak RSS under
// 1 GiB and a produce and consume served afterwards (docs/reliability.md,
// "Request memory").
//
// TestProtocolAbuse and TestSoak read back every acknowledged record and
// print their numbers with t.Log, so run them with -v to see them:
//
//	go test -v -run TestProtocolAbuse ./internal/abuse/
//	STRATA_SOAK_DURATION=30m go test -v -run TestSoak -timeout 0 ./internal/abuse/
package abuse
