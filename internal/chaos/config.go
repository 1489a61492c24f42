package chaos

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
)

// SeedEnv names the environment variable that, when set, replaces the seed
// of any run: STRATA_CHAOS_SEED=123 go test ./internal/chaos -run X
// repeats the run that printed seed 123.
const SeedEnv = "STRATA_CHAOS_SEED"

// UnsafeAckTag is the build tag (agent/partition/unsafe_ack_on.go) under
// which a leader acknowledges acks=all produces before replicating them:
// the broken build the checker must catch. Only UnsafeAck runs build it.
const UnsafeAckTag = "strata_unsafe_ack"

// Store kinds a run can use.
const (
	StoreMinIO = "minio" // a real MinIO behind the fault proxy
	StoreFile  = "file"  // a shared directory; no store faults
)

// Config is one chaos run.
type Config struct {
	// Seed drives the fault plan and the store proxy's choices.
	Seed uint64
	// Agents is how many agent processes share the store.
	Agents int
	// Store is StoreMinIO or StoreFile.
	Store string
	// Topics acks=all topics of Partitions partitions each (RF 3,
	// min.insync.replicas 2) take the idempotent producers' records; one
	// more topic of Partitions partitions takes the acks=1 producer's.
	Topics     int
	Partitions int32
	// Diskless creates the acks=all topics with diskless.enable=true
	// (docs/design.md §7a): every agent takes every partition's produces
	// and the batch coordinators, leaders of __diskless_state's
	// partitions, give the offsets. The replication factor and
	// min.insync.replicas given at creation are accepted and ignored. There
	// is no acks=1 topic: on a diskless topic acks=1 means what acks=all
	// means, so it would test nothing more, and a classic one would bring
	// back the elections this mode shows the producers do without. Faults
	// aimed at "the leader of partition k" hit the leader of partition k
	// of __diskless_state: a batch coordinator.
	Diskless bool
	// Producers idempotent acks=all producers each send one record every
	// ProduceInterval, cycling over every acks=all partition; the acks=1
	// producer sends at the same rate.
	Producers       int
	ProduceInterval time.Duration
	// MetadataMinAge, when positive, is the producers' kgo.MetadataMinAge:
	// the least time between two of their metadata requests, which bounds
	// how soon a producer whose agent died learns of another. Zero keeps
	// franz-go's default (5 s), what its users see.
	MetadataMinAge time.Duration
	// Consumers are the members of the one consumer group, which reads
	// every acks=all topic and commits after each poll.
	Consumers int
	// Warmup is workload without faults before the first fault;
	// Duration bounds the fault phase (a fault that has started runs to
	// its end); MaxFaults bounds the number of faults (0: no bound).
	Warmup    time.Duration
	Duration  time.Duration
	MaxFaults int
	// Faults are the kinds drawn from; Timings bound their durations.
	Faults  []FaultKind
	Timings Timings
	// Cooldown is workload after healing, before the producers stop.
	Cooldown time.Duration
	// HealTimeout bounds the wait, after healing, for every partition to
	// have a leader and a full ISR on every agent, and then for the group
	// to catch up.
	HealTimeout time.Duration
	// UnsafeAck runs agents built with -tags UnsafeAckTag: the broken build.
	UnsafeAck bool
	// Network runs each agent in a network namespace of its own
	// (internal/netns; needs root), which NetworkFaults cut.
	Network bool
	// DiskBytes, when positive, gives each agent a tmpfs of this size as
	// its data directory (needs root), which FaultDiskFull fills.
	DiskBytes int64
	// DrainTimeout, when positive, is the agents' --drain-timeout, so that
	// SIGTERM (FaultDrain) drains. The harness's own stops at the end of
	// a run then drain too, and take longer.
	DrainTimeout time.Duration
	// OutDir receives result.json and every agent's log; empty means a
	// temp dir of the test.
	OutDir string
	// Repeat is the command that repeats the run, for the result.
	Repeat string
}

// DefaultConfig is the short run CI makes: three agents on MinIO, two
// acks=all topics of three partitions, every fault kind, 75 s of faults.
func DefaultConfig() Config {
	return Config{
		Seed:            1,
		Agents:          3,
		Store:           StoreMinIO,
		Topics:          2,
		Partitions:      3,
		Producers:       2,
		ProduceInterval: 4 * time.Millisecond,
		Consumers:       2,
		Warmup:          5 * time.Second,
		Duration:        75 * time.Second,
		MaxFaults:       100,
		Faults:          slices.Clone(DefaultFaults),
		Timings:         DefaultTimings(),
		Cooldown:        3 * time.Second,
		HealTimeout:     60 * time.Second,
	}
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Agents < 3:
		return fmt.Errorf("chaos: Agents = %d: want at least 3 (the topics have 3 replicas)", c.Agents)
	case c.Store != StoreMinIO && c.Store != StoreFile:
		return fmt.Errorf("chaos: Store = %q: want %q or %q", c.Store, StoreMinIO, StoreFile)
	case c.Topics < 1:
		return fmt.Errorf("chaos: Topics = %d: want at least 1", c.Topics)
	case c.Partitions < 1:
		return fmt.Errorf("chaos: Partitions = %d: want at least 1", c.Partitions)
	case c.Producers < 1:
		return fmt.Errorf("chaos: Producers = %d: want at least 1", c.Producers)
	case c.ProduceInterval <= 0:
		return fmt.Errorf("chaos: ProduceInterval = %v: want a positive duration", c.ProduceInterval)
	case c.Consumers < 1:
		return fmt.Errorf("chaos: Consumers = %d: want at least 1", c.Consumers)
	case c.Duration <= 0:
		return fmt.Errorf("chaos: Duration = %v: want a positive duration", c.Duration)
	case c.HealTimeout <= 0:
		return fmt.Errorf("chaos: HealTimeout = %v: want a positive duration", c.HealTimeout)
	case len(c.Faults) == 0:
		return errors.New("chaos: Faults is empty")
	}
	for _, k := range c.Faults {
		if !slices.Contains(AllFaults, k) {
			return fmt.Errorf("chaos: Faults: unknown kind %q (known: %v)", k, AllFaults)
		}
		if (k == FaultStore || k == FaultStoreCut || k == FaultStoreFail) && c.Store != StoreMinIO {
			return fmt.Errorf("chaos: Faults: %q needs Store %q", k, StoreMinIO)
		}
		if slices.Contains(NetworkFaults, k) && !c.Network {
			return fmt.Errorf("chaos: Faults: %q needs Network", k)
		}
		if k == FaultDiskFull && c.DiskBytes <= 0 {
			return fmt.Errorf("chaos: Faults: %q needs DiskBytes", k)
		}
		if k == FaultDrain && c.DrainTimeout <= 0 {
			return fmt.Errorf("chaos: Faults: %q needs DrainTimeout", k)
		}
	}
	return nil
}

// SeedFromEnv returns the seed in SeedEnv if it is set, else def. A value
// that does not parse is an error naming the variable.
func SeedFromEnv(def uint64) (uint64, error) {
	v, ok := os.LookupEnv(SeedEnv)
	if !ok || v == "" {
		return def, nil
	}
	s, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("chaos: %s=%q: want an unsigned integer", SeedEnv, v)
	}
	return s, nil
}
