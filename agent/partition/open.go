package partition

import (
	"github.com/strata-streaming/strata/agent/peer"

	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
)

// Cluster is what a partition asks of the rest of the cluster: the
// controller implements it. Its methods may be called from the
// partition's goroutines and from request handlers, concurrently.
type Cluster interface {
	// ReplicaLagTimeMax is replica.lag.time.max.ms.
	ReplicaLagTimeMax() time.Duration
	// AgentAddr is the Kafka address of another agent, for the fetcher.
	AgentAddr(ctx context.Context, id int32) (string, error)
	// WriteState replaces the partition's state.json by CAS: it fails
	// with metadata.ErrConflict when etag is no longer the stored one's.
	// It returns the new ETag.
	WriteState(ctx context.Context, p *Partition, next metadata.PartitionState, etag string) (string, error)
	// ReloadState re-reads the partition's state and applies it (or
	// leaves a state that no longer lists this agent to the controller,
	// since dropping the replica closes p, which waits for the caller).
	ReloadState(ctx context.Context, p *Partition) error
	// RefreshState re-reads the partition's state soon: a request showed
	// that this agent's view is behind.
	RefreshState(p *Partition)
	// AnnounceState tells the other agents that the partition's state
	// changed.
	AnnounceState(p *Partition, stateEpoch int32)
}

// Metrics are the counters the partitions of one agent share.
type Metrics struct {
	isrChanges  *prometheus.CounterVec
	casLost     prometheus.Counter
	copiedBytes *prometheus.CounterVec
}

// NewMetrics registers the partitions' metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		isrChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_isr_changes_total",
			Help: "ISR changes this agent wrote as leader, by op (expand, shrink)."}, []string{"op"}),
		casLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_isr_change_conflicts_total",
			Help: "ISR changes this agent proposed as leader that lost the CAS of state.json: another agent had changed the partition (a new leader), and this one re-read it."}),
		copiedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_replica_copied_bytes_total",
			Help: "Record bytes this agent's follower replicas copied from their leaders, by topic."}, []string{"topic"}),
	}
	reg.MustRegister(m.isrChanges, m.casLost, m.copiedBytes)
	return m
}

// ISRChanged counts an ISR change written by other code than a
// partition's ISR writer (a replica that lost its disk leaving the ISR).
func (m *Metrics) ISRChanged(op string) { m.isrChanges.WithLabelValues(op).Inc() }

// Config is one partition to open.
type Config struct {
	Topic   string
	TopicID [16]byte
	Index   int32
	AgentID int32 // this agent
	// Log is the partition's opened log; the partition owns it from Open
	// on (also when Open fails: it is closed then).
	Log   *log.Log
	Flush log.FlushPolicy
	// MinISR is the topic's min.insync.replicas.
	MinISR int32
	// Stored and ETag are the partition's state as the store holds it.
	// The partition opens in it without serving it: the replica machine
	// takes a role at the first ApplyState, which may apply another state
	// (a restarted leader takes over in a new epoch). Until then Leader
	// and Leading report Stored's leader, which tiering reads when it
	// opens.
	Stored metadata.PartitionState
	ETag   string
}

// Deps are a partition's collaborators.
type Deps struct {
	Cluster Cluster
	Logger  *slog.Logger
	Metrics *Metrics
	// Notify wakes every long poll of the agent (the fetch handler's
	// agent-wide signal).
	Notify func()
	// Started is closed when the agent serves; the fetcher starts then
	// (the peers' addresses are known from gossip only from then on).
	Started <-chan struct{}
	// Peer is how the fetcher connects to its leader: the inter-agent
	// listener's TLS and SASL, if any.
	Peer peer.Options
	// Fetchers are the agent's fetch loops, shared by its partitions;
	// required. The agent closes them after its partitions.
	Fetchers *Fetchers
}

// Open builds the partition on cfg.Log and starts its fetcher; Close
// stops it.
func Open(cfg Config, deps Deps) (*Partition, error) {
	if deps.Fetchers == nil {
		panic("partition: Open without Deps.Fetchers")
	}
	p := &Partition{
		topic: cfg.Topic, topicID: cfg.TopicID, index: cfg.Index, agentID: cfg.AgentID, log: cfg.Log, flush: cfg.Flush,
		notify: deps.Notify, cluster: deps.Cluster, logger: deps.Logger, metrics: deps.Metrics, started: deps.Started, peer: deps.Peer,
		fetchers: deps.Fetchers, minISR: cfg.MinISR, state: cfg.Stored, etag: cfg.ETag,
		hwCh: make(chan struct{}), changed: make(chan struct{}), stopped: make(chan struct{}),
	}
	p.load.Start(time.Now())
	// No HW checkpoint is kept: the log start is a safe floor, and a
	// leader's HW moves up at its followers' first fetches.
	var err error
	if p.rep, err = replica.New(cfg.AgentID, p.replicaConfig(), cfg.Log.LogStartOffset()); err != nil {
		cfg.Log.Close()
		return nil, fmt.Errorf("topic %s partition %d: %w", cfg.Topic, cfg.Index, err)
	}
	p.hw.Store(cfg.Log.LogStartOffset())
	p.fetching.Add(1)
	go func() {
		defer p.fetching.Done()
		p.runFetcher()
	}()
	return p, nil
}
