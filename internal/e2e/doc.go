// Package e2e holds end-to-end tests: the real strata binary runs as a
// subprocess (internal/testagent) and real Kafka clients — franz-go, sarama,
// segmentio/kafka-go, kcat (librdkafka), confluent-kafka-python, kafka-python,
// kafkajs and the strata CLI — talk to it over loopback TCP. Every test checks the exact records read back: keys, values,
// headers, timestamps where the client exposes them, and order per partition.
//
// The package has no non-test code. Each test file shares one agent between
// its subtests (they use distinct topics) to keep the run short. kcat tests
// skip when kcat is not on PATH, unless CI=true, where they fail.
// TestConsumePastStoredBomb alone also writes to an agent's data directory
// through agent/log, between two runs, to stand for what an older build
// left there.
package e2e
