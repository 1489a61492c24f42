package replica

import (
	"fmt"
	"time"
)

// Config holds the settings the state machine decides with, named as
// Kafka's.
type Config struct {
	// ReplicaLagTimeMax (replica.lag.time.max.ms): a follower in the ISR
	// that has not been caught up to the leader's end within this long, or
	// has not fetched for this long, is proposed for removal (CheckISR).
	ReplicaLagTimeMax time.Duration
	// MinInsyncReplicas (min.insync.replicas, a topic setting): acks=all
	// appends need an ISR at least this large, and the HW does not advance
	// while the ISR is smaller. Values above the replication factor count
	// as the replication factor, as in Kafka.
	MinInsyncReplicas int
}

// Defaults, as Apache Kafka's.
const (
	DefaultReplicaLagTimeMax = 30 * time.Second
	DefaultMinInsyncReplicas = 1
)

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{ReplicaLagTimeMax: DefaultReplicaLagTimeMax, MinInsyncReplicas: DefaultMinInsyncReplicas}
}

// Validate reports the first bad field by its Kafka name.
func (c Config) Validate() error {
	switch {
	case c.ReplicaLagTimeMax <= 0:
		return fmt.Errorf("%w: replica.lag.time.max.ms %v must be positive", ErrInvalidConfig, c.ReplicaLagTimeMax)
	case c.MinInsyncReplicas < 1:
		return fmt.Errorf("%w: min.insync.replicas %d must be at least 1", ErrInvalidConfig, c.MinInsyncReplicas)
	}
	return nil
}
