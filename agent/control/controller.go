package control

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/placement"
	"github.com/strata-streaming/strata/membership"
)

// Key names one partition across agents.
type Key struct {
	TopicID [16]byte
	Index   int32
}

// Host is the agent as the controller sees it: its topic table, and the
// few actions that change it. The agent root implements it; every method
// is safe for concurrent use.
type Host interface {
	// Partitions are this agent's replicas, ordered by topic and index.
	Partitions() []*partition.Partition
	// Lookup finds a served partition: this agent's replica, or a peer.
	Lookup(k Key) (*partition.Partition, *partition.Peer)
	// Topics are the served topics, ordered by name.
	Topics() []*dataplane.Topic
	// Topic is a served topic by name.
	Topic(name string) (*dataplane.Topic, bool)
	// PlacementAgents are the live agents in placement order.
	PlacementAgents() []int32
	// MoveReplica opens this agent's replica of k, which st now gives it,
	// or closes and removes the one st no longer lists.
	MoveReplica(k Key, st metadata.PartitionState, etag string)
	// LeaderMovedAway tells the agent that p, which it led, is now led
	// elsewhere (the group coordinator of __consumer_offsets unloads).
	LeaderMovedAway(p *partition.Partition)
	// UploadTiered uploads every sealed segment of the tiered partitions.
	UploadTiered(ctx context.Context)
	// StopAgent closes the agent (after a requested drain).
	StopAgent()
}

// Members is the gossip membership the controller reads and announces on.
type Members interface {
	Self() membership.Member
	Members() []membership.Member
	Broadcast(key string, value []byte) error
	SetState(ctx context.Context, s membership.State) error
}

// Config is the controller's share of the agent's settings.
type Config struct {
	Rack                      string
	ReplicaLagTimeMax         time.Duration
	ReconcileInterval         time.Duration
	AutoRebalance             bool
	AutoLeaderRebalance       bool
	RebalanceSettle           time.Duration
	RebalanceMaxMoves         int
	RebalanceMaxMovesPerAgent int
	DrainTimeout              time.Duration
	// ReplaceDeadAgentAfter is how long an agent that holds replicas may
	// be absent from gossip before the balancer re-places them (lost.go);
	// 0 never.
	ReplaceDeadAgentAfter time.Duration
	// RebalanceByLoad places replicas by the agents' measured load
	// (placement.PlaceByLoad, within LoadBalance's tolerance) rather
	// than by counts alone, and makes every agent report its load every
	// LoadReportInterval (load.go).
	RebalanceByLoad    bool
	LoadBalance        placement.Balance
	LoadReportInterval time.Duration
}

// Controller is one agent's part of the cluster control plane (package
// comment).
type Controller struct {
	id          int32
	cfg         Config
	store       *metadata.Store
	host        Host
	members     Members // nil until SetMembers
	logger      *slog.Logger
	metrics     metrics
	partMetrics *partition.Metrics
	startedAt   time.Time
	refresh     stateRefresh // partition states to re-read; wakes the replication loop
	deaths      deaths       // evidence of agents' deaths before gossip's (deaths.go)
	// membersChangedAt is the last gossip join, leave, failure or state
	// change, in Unix nanoseconds; the balancer waits for it to settle.
	membersChangedAt atomic.Int64
	draining         atomic.Bool
	// drainErr is why the last requested drain did not finish, if it did
	// not (the agent then stays up).
	drainErr  atomic.Pointer[string]
	movesSeen map[Key]time.Time // owned by the replication loop
	// absentSince is when the balancer first saw each agent that moves
	// in flight wait for absent from gossip (moves.go).
	absentMu    sync.Mutex
	absentSince map[int32]time.Time
	// lostSince is when the balancer first saw each replica holder
	// absent; lostLogged the agents it has said are lost (lost.go).
	lostMu     sync.Mutex
	lostSince  map[int32]time.Time
	lostLogged map[int32]bool
	// roundMu makes balancer rounds (BalanceOnce) one at a time, and
	// guards what they keep between them: when this agent last renewed
	// the lease (zero: not held), and when it last re-read every state to
	// plan moves, with the moves then in flight.
	roundMu      sync.Mutex
	leaseRenewed time.Time
	lastRefresh  time.Time
	lastMoving   int
	// loadReports are the other agents' load reports as last read, and
	// loadMemory each partition's last settled load (load.go); guarded
	// by roundMu too.
	loadReports map[int32]cachedReport
	loadMemory  map[Key]rememberedLoad
}

type metrics struct {
	elections    prometheus.Counter
	movesDone    prometheus.Counter
	movesStarted prometheus.Counter
	// movesCancelled counts the moves to agents that left (moves.go).
	movesCancelled prometheus.Counter
	moveSeconds    prometheus.Histogram
	// uncleanReplacements counts the partitions given new replicas after
	// every replica's agent was lost (lost.go).
	uncleanReplacements prometheus.Counter
	// leadershipMoves counts the preferred leaders the balancer changed
	// without a move (balancer.go).
	leadershipMoves prometheus.Counter
}

// New builds the controller of agent id; Run runs its loops.
func New(id int32, cfg Config, store *metadata.Store, host Host, partMetrics *partition.Metrics, reg prometheus.Registerer, logger *slog.Logger, now time.Time) *Controller {
	c := &Controller{id: id, cfg: cfg, store: store, host: host, logger: logger, partMetrics: partMetrics, startedAt: now,
		refresh: stateRefresh{wake: make(chan struct{}, 1)}, movesSeen: map[Key]time.Time{},
		loadReports: map[int32]cachedReport{}, loadMemory: map[Key]rememberedLoad{}}
	c.metrics = metrics{
		elections: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_leader_elections_total",
			Help: "Partition leaderships this agent took over from a dead or restarted leader."}),
		movesDone: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_reassignments_completed_total",
			Help: "Partition reassignments this agent completed as leader."}),
		movesStarted: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_reassignments_started_total",
			Help: "Partition moves the balancer started while this agent held its lease."}),
		movesCancelled: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_reassignments_cancelled_total",
			Help: "Partition moves this agent cancelled as balancer because an agent they were adding a replica on had left or was draining."}),
		moveSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_reassignment_seconds",
			Help: "Time from when the leader first saw a move until it completed it.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
	}
	c.metrics.uncleanReplacements = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_unclean_replacements_total",
		Help: "Partitions this agent, as balancer, gave new replicas after every replica's agent was lost; the records acknowledged after their last upload to the bucket were lost (unclean.leader.election.enable)."})
	c.metrics.leadershipMoves = prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_balancer_leadership_moves_total",
		Help: "Preferred leaders this agent, as balancer, changed by reordering a partition's replicas: no data copied."})
	reg.MustRegister(c.metrics.elections, c.metrics.movesDone, c.metrics.movesStarted, c.metrics.movesCancelled, c.metrics.moveSeconds,
		c.metrics.uncleanReplacements, c.metrics.leadershipMoves)
	c.MemberChanged(now)
	return c
}

// SetMembers hands the controller the gossip membership, once, before Run.
func (c *Controller) SetMembers(m Members) { c.members = m }

// Run runs the replication loop, the balancer and (with RebalanceByLoad)
// the load reports until ctx ends, and waits for all of them.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { c.balancerLoop(ctx) })
	if c.cfg.AutoRebalance && c.cfg.RebalanceByLoad && c.cfg.LoadReportInterval > 0 {
		wg.Go(func() { c.loadReportLoop(ctx) })
	}
	c.replicationLoop(ctx)
	wg.Wait()
}

// MemberChanged records a membership change at now: the balancer waits
// for the settling period after the last one, and elections and ISR
// eligibility follow at once.
func (c *Controller) MemberChanged(now time.Time) {
	c.membersChangedAt.Store(now.UnixNano())
	c.refresh.wakeUp()
}

// OnBroadcast queues a re-read of an announced partition state, and
// reports whether the broadcast was one.
func (c *Controller) OnBroadcast(e membership.Event) bool { return c.onStateBroadcast(e) }

// Draining reports whether this agent drains.
func (c *Controller) Draining() bool { return c.draining.Load() }

// DrainErr is why the last requested drain did not finish, "" if it did.
func (c *Controller) DrainErr() string {
	if e := c.drainErr.Load(); e != nil {
		return *e
	}
	return ""
}

// The partition.Cluster methods: the controller writes and re-reads the
// states of the agent's partitions.
var _ partition.Cluster = (*Controller)(nil)

func (c *Controller) ReplicaLagTimeMax() time.Duration { return c.cfg.ReplicaLagTimeMax }

func (c *Controller) WriteState(ctx context.Context, p *partition.Partition, next metadata.PartitionState, etag string) (string, error) {
	return c.store.CASPartitionState(ctx, p.TopicID(), p.Index(), next, etag)
}

func (c *Controller) ReloadState(ctx context.Context, p *partition.Partition) error {
	return c.reloadState(ctx, p)
}

func (c *Controller) RefreshState(p *partition.Partition) { c.refreshState(p) }

func (c *Controller) AnnounceState(p *partition.Partition, stateEpoch int32) {
	c.announceState(Key{p.TopicID(), p.Index()}, stateEpoch)
}

// AgentAddr is the Kafka address of another agent: from gossip, else from
// its registration in the store (an agent gossip has not listed yet).
func (c *Controller) AgentAddr(ctx context.Context, id int32) (string, error) {
	if c.members != nil {
		for _, m := range c.members.Members() {
			if m.ID == id {
				return m.KafkaAddr, nil
			}
		}
	}
	info, err := c.store.Agent(ctx, id)
	if err != nil {
		return "", fmt.Errorf("address of agent %d: %w", id, err)
	}
	return info.KafkaAddr, nil
}
