package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"
)

// Mode is what a run measures.
type Mode string

const (
	// ModeProduce measures produce throughput and latency (to the ack).
	ModeProduce Mode = "produce"
	// ModeEndToEnd also runs a tail consumer and measures, per record, the
	// time from its scheduled send to its consumption.
	ModeEndToEnd Mode = "e2e"
	// ModeCatchUp fills the topic with Records records, then times a fresh
	// consumer reading all of them from offset 0.
	ModeCatchUp Mode = "catchup"
	// ModeCatchUpStore is ModeCatchUp with the data in the object store:
	// the topic has 4 MiB segments and local.retention.bytes 0, and the
	// read starts once every sealed segment is uploaded and gone from the
	// agent's disk. It needs a Strata target; with Warm, the data is read
	// once, untimed, before the timed read.
	ModeCatchUpStore Mode = "catchup-store"
)

// Config is one run's workload. Rate 0 is closed loop: each producer keeps
// its client's buffer full and latency is measured from the Produce call.
// Rate > 0 is open loop: records are scheduled at fixed intervals and latency
// is measured from each record's scheduled time, so a broker that falls
// behind shows its queueing in the latency instead of slowing the load.
type Config struct {
	// Scenario names the run in the output; empty means one is made up
	// from the settings.
	Scenario string
	Mode     Mode
	// Rate is the target records per second over all producers; 0 is
	// closed loop.
	Rate int
	// RecordBytes is each record's value size; at least 16 (the send
	// timestamp and sequence number travel in the value).
	RecordBytes int
	// Keys, above 0, gives every record one of this many 16-byte keys,
	// in turn (keyOf), so records are hashed to partitions and a
	// compacted topic holds at most Keys live records; 0 sends records
	// without keys, spread over the partitions in turn.
	Keys       int
	Partitions int
	// Compact creates the benchmark topic with cleanup.policy=compact and
	// small segments (compaction.go), so that the agent's cleaner has
	// sealed segments to clean during the run; it needs Keys.
	Compact bool
	// Diskless creates the benchmark topic with diskless.enable=true
	// (diskless.go): produce is answered once a batch is in the store and
	// committed. It needs a Strata target whose agents have a store; a
	// Strata run then records what they wrote to the store during the
	// timed phase (StoreWrites). The strata-diskless target chooses each
	// of its systems' topic mode itself and takes no --diskless.
	Diskless bool
	// ReplicationFactor is the benchmark topic's; it has no flag in
	// RegisterFlags because strata-bench takes a list of them and
	// alternates, so that one invocation compares factors.
	ReplicationFactor int
	Producers         int
	// Acks is "0", "1" or "all"; acks=all producers are idempotent.
	Acks        string
	Linger      time.Duration
	Compression string
	// Duration bounds the send phase; Records, if above 0, bounds it by
	// count instead (and is the fill size of a catch-up run).
	Duration time.Duration
	Records  int64
	// MaxBufferedRecords is each producer client's limit of records not
	// yet acknowledged; Produce blocks at the limit.
	MaxBufferedRecords int
	// DrainTimeout bounds the wait for outstanding acknowledgements and,
	// in e2e and catch-up runs, for the consumer to see every record.
	DrainTimeout time.Duration
	// Seed seeds the random record contents.
	Seed uint64
	// Warm, in catchup-store runs, reads everything once before the timed
	// read, so that the agent's chunk cache holds what it can.
	Warm bool
	// UploadSettle, for Strata targets, is how long the store's PUT count
	// must stand still at the end of a run before it is read, so that
	// uploads of the segments the run sealed are counted; 0 reads it at
	// once.
	UploadSettle time.Duration
	// Connections is how many idle client connections are held open to
	// the target during the run, besides the producers' and the
	// consumer's (connections.go says what they send and why).
	Connections int
	// ConnectionInterval is how often each idle connection sends its
	// request; 0 sends none after the connection's opening requests.
	ConnectionInterval time.Duration
	// TxnRecords, above 0, makes every producer transactional: each
	// transaction holds this many of its records and is committed before
	// the next begins (produce mode, acks=all; txn.go).
	TxnRecords int

	// inspect, if set, is called with the topic's name once the measured
	// phase is over and before the topic is deleted, so that a test can
	// look at the topic on the cluster. Kafka targets only.
	inspect func(ctx context.Context, topic string)
}

// DefaultConfig is closed-loop produce of 1 KiB records, acks=all, linger 0,
// no compression, one producer, one partition with one replica, for 10 s,
// with no idle connections (each would send a request every 3 s).
func DefaultConfig() Config {
	return Config{
		Mode:               ModeProduce,
		RecordBytes:        1024,
		Partitions:         1,
		ReplicationFactor:  1,
		Producers:          1,
		Acks:               "all",
		Compression:        "none",
		Duration:           10 * time.Second,
		MaxBufferedRecords: 10000,
		DrainTimeout:       30 * time.Second,
		Seed:               1,
		ConnectionInterval: 3 * time.Second,
	}
}

// RegisterFlags adds a flag for every setting but ReplicationFactor to fs,
// with c's values as the defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Scenario, "scenario", c.Scenario, "Name of the run in the output; empty makes one from the settings.")
	fs.StringVar((*string)(&c.Mode), "mode", string(c.Mode), "What to measure: produce, e2e (produce with a tail consumer), catchup (fill, then read from offset 0) or catchup-store (the same once the data is in the object store; Strata targets only).")
	fs.IntVar(&c.Rate, "rate", c.Rate, "Target records per second over all producers (open loop); 0 sends as fast as acknowledgements allow (closed loop).")
	fs.IntVar(&c.RecordBytes, "record-bytes", c.RecordBytes, "Size of each record's value in bytes (at least 16).")
	fs.IntVar(&c.Keys, "keys", c.Keys, "Give every record one of this many 16-byte keys, in turn, hashed to pick the partition; 0 sends records without keys.")
	fs.BoolVar(&c.Compact, "compact", c.Compact, "Create the benchmark topic with cleanup.policy=compact and 4 MiB segments, so that a Strata agent's log cleaner works during the run (produce and e2e modes; needs --keys); Strata results then carry what the cleaner did.")
	fs.BoolVar(&c.Diskless, "diskless", c.Diskless, "Create the benchmark topic with diskless.enable=true, so that produce is answered once the batch is in the object store and committed (Strata targets with a store; produce, e2e and catchup modes); Strata results then carry the store PUTs of the timed phase.")
	fs.IntVar(&c.Partitions, "partitions", c.Partitions, "Partitions of the benchmark topic.")
	fs.IntVar(&c.Producers, "producers", c.Producers, "Producer clients, each with its own connections; the rate is split between them.")
	fs.StringVar(&c.Acks, "acks", c.Acks, "Producer acks: 0, 1 or all (all is idempotent).")
	fs.DurationVar(&c.Linger, "linger", c.Linger, "Producer linger (linger.ms).")
	fs.StringVar(&c.Compression, "compression", c.Compression, "Batch compression: none, gzip, snappy, lz4 or zstd.")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "How long to send, unless --records is set.")
	fs.Int64Var(&c.Records, "records", c.Records, "Records to send (instead of --duration); in catchup mode, the fill size.")
	fs.IntVar(&c.MaxBufferedRecords, "max-buffered-records", c.MaxBufferedRecords, "Records each producer may have unacknowledged before Produce blocks.")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "Longest wait for outstanding acknowledgements and for the consumer to catch up.")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "Seed of the random record contents.")
	fs.BoolVar(&c.Warm, "warm", c.Warm, "In catchup-store mode, read everything once, untimed, before the timed read.")
	fs.IntVar(&c.Connections, "connections", c.Connections, "Idle client connections held open to the target during each run, besides the producers and the consumer: each connects as a client does (Kafka: ApiVersions and Metadata; JetStream: a NATS CONNECT and PING) and then sends one request every --connection-interval.")
	fs.DurationVar(&c.ConnectionInterval, "connection-interval", c.ConnectionInterval, "How often each of the --connections sends its request (Kafka: Metadata for the benchmark topic; JetStream: a PING); 0 sends none after connecting.")
	fs.IntVar(&c.TxnRecords, "txn-records", c.TxnRecords, "Make every producer transactional, committing every this many of its records (produce mode, acks=all); 0 is not transactional.")
	fs.DurationVar(&c.UploadSettle, "upload-settle", c.UploadSettle, "For Strata targets: wait at the end of a run until the object store's PUT count has not changed for this long (bounded by --drain-timeout), so trailing segment uploads are counted.")
}

// Validate names the first bad setting.
func (c Config) Validate() error {
	switch {
	case c.Mode != ModeProduce && c.Mode != ModeEndToEnd && c.Mode != ModeCatchUp && c.Mode != ModeCatchUpStore:
		return fmt.Errorf("--mode %q: want produce, e2e, catchup or catchup-store", c.Mode)
	case c.Rate < 0:
		return fmt.Errorf("--rate %d: want 0 (closed loop) or more", c.Rate)
	case c.RecordBytes < headerBytes:
		return fmt.Errorf("--record-bytes %d: want at least %d", c.RecordBytes, headerBytes)
	case c.Keys < 0:
		return fmt.Errorf("--keys %d: want 0 (no keys) or more", c.Keys)
	case c.Compact && c.Keys == 0:
		return errors.New("--compact: a compacted topic takes only records with keys; set --keys")
	case c.Compact && c.Mode != ModeProduce && c.Mode != ModeEndToEnd:
		// A catch-up read of a compacted topic finds fewer records than
		// were sent, by design.
		return fmt.Errorf("--compact: want --mode produce or e2e, not %s", c.Mode)
	case c.Diskless && c.Compact:
		// The agent refuses the combination at creation.
		return errors.New("--diskless with --compact: compacted diskless topics are not supported")
	case c.Diskless && c.Mode == ModeCatchUpStore:
		// catchup-store sets local.retention.bytes, which a diskless
		// topic refuses: it has no local log.
		return errors.New("--diskless: want --mode produce, e2e or catchup, not catchup-store")
	case c.Partitions < 1:
		return fmt.Errorf("--partitions %d: want at least 1", c.Partitions)
	case c.ReplicationFactor < 1 || c.ReplicationFactor > math.MaxInt16:
		return fmt.Errorf("--replication-factor %d: want 1 to %d", c.ReplicationFactor, math.MaxInt16)
	case c.Producers < 1:
		return fmt.Errorf("--producers %d: want at least 1", c.Producers)
	case c.Acks != "0" && c.Acks != "1" && c.Acks != "all":
		return fmt.Errorf("--acks %q: want 0, 1 or all", c.Acks)
	case c.Linger < 0:
		return fmt.Errorf("--linger %v: want 0 or more", c.Linger)
	case c.Records < 0:
		return fmt.Errorf("--records %d: want 0 (use --duration) or more", c.Records)
	case c.Records == 0 && c.Duration <= 0:
		return errors.New("--duration: want a positive duration when --records is 0")
	case (c.Mode == ModeCatchUp || c.Mode == ModeCatchUpStore) && c.Records == 0:
		return errors.New("--records: catchup mode needs the number of records to fill and read")
	case c.MaxBufferedRecords < 1:
		return fmt.Errorf("--max-buffered-records %d: want at least 1", c.MaxBufferedRecords)
	case c.UploadSettle < 0:
		return fmt.Errorf("--upload-settle %v: want 0 or more", c.UploadSettle)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("--drain-timeout %v: want a positive duration", c.DrainTimeout)
	case c.Connections < 0 || c.Connections > maxConnections:
		return fmt.Errorf("--connections %d: want 0 to %d", c.Connections, maxConnections)
	case c.ConnectionInterval < 0:
		return fmt.Errorf("--connection-interval %v: want 0 or more", c.ConnectionInterval)
	case c.TxnRecords < 0:
		return fmt.Errorf("--txn-records %d: want 0 (not transactional) or more", c.TxnRecords)
	case c.TxnRecords > 0 && (c.Mode != ModeProduce || c.Acks != "all"):
		return fmt.Errorf("--txn-records %d: transactions need --mode produce and --acks all", c.TxnRecords)
	}
	if _, err := codec(c.Compression); err != nil {
		return err
	}
	return nil
}

// name is the scenario name: the one given, or one made from the settings.
func (c Config) name() string {
	if c.Scenario != "" {
		return c.Scenario
	}
	loop := "closed"
	if c.Rate > 0 {
		loop = fmt.Sprintf("paced-%d", c.Rate)
	}
	name := fmt.Sprintf("%s/%s/acks=%s/%dB/p%d/rf=%d/producers=%d", c.Mode, loop, c.Acks, c.RecordBytes, c.Partitions, c.ReplicationFactor, c.Producers)
	if c.Connections > 0 {
		name += fmt.Sprintf("/connections=%d", c.Connections)
	}
	if c.TxnRecords > 0 {
		name += fmt.Sprintf("/txn=%d", c.TxnRecords)
	}
	if c.Keys > 0 {
		name += fmt.Sprintf("/keys=%d", c.Keys)
	}
	if c.Compact {
		name += "/compact"
	}
	if c.Diskless {
		name += "/diskless"
	}
	return name
}
