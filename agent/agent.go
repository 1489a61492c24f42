// Package agent wires one Strata agent together: the data directory and its
// meta.json, the object store and the metadata kept in it, the topic table
// (agent/topics, which sees the agent's partition logs, replication and
// gossip through topics.Host), the cluster controller (agent/control,
// which sees the table through control.Host), the group and transaction
// coordinators (agent/coord, which see the agent through coord.Host),
// tiering, the Kafka wire server, the HTTP server (agent/httpapi, which
// sees the agent through httpapi.Host) and the background loops. The wire
// server's families are the topic table (TopicReader, TopicAdmin), the
// coordinators (Groups, Transactions, ProducerIDs), the security state
// and the agent for the rest (backends).
//
// # Life cycle
//
// New opens everything and binds both listeners, so a bad setting, a busy
// port, a data directory of another cluster or a damaged log stops the start
// with an error that names it. Run serves until its context ends and then
// closes the agent. Close stops, in order: gossip, the Kafka listener and
// every connection (waiting for the requests in flight), the HTTP server,
// the background loops (retention, transactions, tiering, reconcile, the
// controller's), the coordinators (transactions, waiting for their marker
// writers, then groups), the connections to other agents, the partitions
// (their fetchers and ISR writers, then their logs: fsync and
// clean-shutdown mark) and tiering; it may be called twice.
//
// # Concurrency
//
// The topic table owns its locks (agent/topics: adminMu serialises topic
// changes, mu guards its maps; lock order adminMu, then mu, then a
// partition's lock). The root holds no topic lock of its own: it reads
// immutable entries from the table, and its topics.Host methods run under
// the table's adminMu, so they never call the table's changing methods.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/cleaner"
	"github.com/strata-streaming/strata/agent/control"
	"github.com/strata-streaming/strata/agent/coord"
	"github.com/strata-streaming/strata/agent/diskless"
	"github.com/strata-streaming/strata/agent/httpapi"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/listener"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/agent/users"
	"github.com/strata-streaming/strata/internal/oauthbearer"
	"github.com/strata-streaming/strata/internal/tlsconfig"
	"github.com/strata-streaming/strata/internal/vfs"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// Agent is one running agent. See the package comment for its life cycle.
type Agent struct {
	cfg          Config
	fs           vfs.FS
	logger       *slog.Logger
	registry     *prometheus.Registry
	flush        log.FlushPolicy
	bucket       objstore.Bucket
	store        *metadata.Store
	wrapStore    func(objstore.Bucket) objstore.Bucket
	tier         *tiering.Tierer
	members      *membership.Membership
	reconcileNow chan struct{} // wakes reconcileLoop
	startedAt    time.Time
	// ctl is the cluster controller: elections, ISR writes' store side,
	// reassignments, the balancer and drains.
	ctl *control.Controller
	// running is closed when Run starts: fetchers wait for it, since
	// gossip (a.members) is set up last in New.
	running     chan struct{}
	partMetrics *partition.Metrics
	cleaner     *cleaner.Cleaner
	clusterID   string
	id          int32
	advertised  listener.HostPort
	lockFile    *os.File
	syncer      *log.Syncer // nil: --log-group-sync=false
	files       *log.FilePool

	// topics is the topic table (agent/topics); nil until the store is
	// open.
	topics *topics.Table

	signal partition.Signal // wakes every long poll
	// coords are the group and transaction coordinators loaded here and
	// the producer ids (agent/coord); nil until the topic table exists.
	coords *coord.Coordinators

	// listeners are the Kafka listeners; kafkaLn and advertised are the
	// first's, the one replication and the console use (agent/listener).
	listeners []listener.Bound
	kafkaLn   net.Listener
	users     *users.Users
	acls      *acl.Authorizer // nil without --authorizer acl
	quotas    *quota.Cache
	kafkaSrv  *kafka.Server
	// http serves the HTTP port (http.go).
	http *httpapi.Server
	// jwks keeps OAUTHBEARER's keys current; nil without
	// --sasl-oauthbearer-jwks-endpoint-url.
	jwks oauthbearer.Source
	// peer is how this agent's followers dial their leaders
	// (agent/listener).
	peer peer.Options
	// peers holds the connections transaction markers and verification
	// use to reach other agents (agent/peer).
	peers *peer.Pool
	// diskless is the diskless data path, over its own pool of
	// inter-agent connections (diskless.go).
	diskless      *diskless.Service
	disklessPeers *peer.Pool
	// fetchers are the follower replicas' fetch loops, one per leader
	// agent (agent/partition's Fetchers).
	fetchers *partition.Fetchers
	ready    atomic.Bool

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Options are an agent's collaborators; the zero value is production's.
type Options struct {
	Logger *slog.Logger // default slog.Default()
	// FS is the file system under the partition logs and the data
	// directory's state files; default vfs.Default. Tests inject faults here.
	FS vfs.FS
	// WrapStore, if set, wraps the bucket --store opens (tests inject store
	// faults with objstore.NewFaulty).
	WrapStore func(objstore.Bucket) objstore.Bucket
	// TxnBeforeMarkers, if set, runs between a transaction's Prepare
	// record and its markers (txn.Config.BeforeMarkers): tests stop a
	// coordinator there to see the next one complete the transaction.
	TxnBeforeMarkers func(transactionalID string) bool
}

// New validates cfg, opens the data directory, the store and every local
// partition log, and binds the listeners. The caller must Close the agent
// (Run does so when it returns).
func New(ctx context.Context, cfg Config, opts Options) (_ *Agent, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if cfg.AgentIDFromHostname {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--agent-id-from-hostname: %w", err)
		}
		if cfg.AgentID, err = hostOrdinal(host); err != nil {
			return nil, err
		}
		logger.Info("agent id from the host name", "host", host, "agent_id", cfg.AgentID)
	}
	a := &Agent{
		cfg:          cfg,
		fs:           opts.FS,
		logger:       logger,
		registry:     prometheus.NewRegistry(),
		stop:         make(chan struct{}),
		wrapStore:    opts.WrapStore,
		reconcileNow: make(chan struct{}, 1),
		startedAt:    time.Now(),
		running:      make(chan struct{}),
	}
	a.partMetrics = partition.NewMetrics(a.registry)
	a.cleaner = cleaner.New(cfg.LogCleaner, cfg.DataDir, cleanerHost{a}, a.registry, logger.With("component", "cleaner"))
	a.flush, _ = log.ParseFlushPolicy(cfg.LogFlush) // checked by Validate
	defer func() {
		if err != nil {
			a.closePartitions()
			if a.fetchers != nil {
				a.fetchers.Close()
			}
			a.release()
		}
	}()
	if a.http, err = httpapi.New(cfg.httpConfig(), httpHost{a}, logger, a.registry); err != nil {
		return nil, err
	}
	if err := a.openDataDir(); err != nil {
		return nil, err
	}
	a.files = a.newFilePool()
	if err := a.bind(); err != nil {
		return nil, err
	}
	if a.peer, err = a.cfg.PeerOptions(a.listeners[0].Protocol, a.cfg.TLS); err != nil {
		return nil, err
	}
	if err := a.openStore(ctx); err != nil {
		return nil, err
	}
	if a.peers, err = a.newPeerPool(); err != nil { // needs a.id
		return nil, err
	}
	if err := a.openTiering(); err != nil {
		return nil, err
	}
	if err := a.openSecurity(ctx); err != nil {
		return nil, err
	}
	a.ctl = control.New(a.id, control.Config{Rack: cfg.Rack, ReplicaLagTimeMax: cfg.ReplicaLagTimeMax, ReconcileInterval: cfg.ReconcileInterval,
		AutoRebalance: cfg.AutoRebalance, AutoLeaderRebalance: cfg.AutoLeaderRebalance, RebalanceSettle: cfg.RebalanceSettle,
		RebalanceMaxMoves: cfg.RebalanceMaxMoves, RebalanceMaxMovesPerAgent: cfg.RebalanceMaxMovesPerAgent, DrainTimeout: cfg.DrainTimeout,
		ReplaceDeadAgentAfter: cfg.ReplaceDeadAgentAfter, RebalanceByLoad: cfg.RebalanceBy == "load",
		LoadBalance: cfg.loadBalance(), LoadReportInterval: cfg.LoadReportInterval},
		a.store, hostView{a}, a.partMetrics, a.registry, logger.With("component", "control"), a.startedAt)
	a.fetchers = partition.NewFetchers(a.id, a.ctl, a.peer, logger.With("component", "replica-fetcher"))
	a.topics = a.newTopicTable()
	// Before the partitions open: applying their states may unload a
	// coordinator (control.Host.LeaderMovedAway).
	a.coords = coord.New(a.id, cfg.coordConfig(opts.TxnBeforeMarkers), a.topics, coordHost{a}, a.store, a.peers, a.registry, logger)
	if err := a.openDiskless(); err != nil {
		return nil, err
	}
	if err := a.loadTopics(ctx); err != nil {
		return nil, err
	}
	a.topics.CompactInternalTopics(ctx)
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.registry.MustRegister(partition.NewCollector(a.id, a.localPartitions, cfg.NetworkCapacity), newOpsCollector(a))
	// Validate parsed the rules already.
	cfg.Kafka.SSLPrincipalMapper, _ = tlsconfig.ParsePrincipalRules(cfg.SSLPrincipalMappingRules)
	cfg.Kafka.SASLEnabledMechanisms = cfg.saslMechanisms()
	if cfg.Kafka.OAuthBearer, a.jwks, err = a.loadOAuthBearer(ctx); err != nil {
		return nil, err
	}
	a.kafkaSrv = kafka.New(cfg.Kafka, a.backends(), logger.With("component", "kafka"), kafka.NewMetrics(a.registry))
	// Last, so that nothing after it can fail and leave a member behind.
	if err := a.startMembership(); err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	a.ctl.SetMembers(a.members)
	a.http.SetDeps(a.httpDeps())
	logger.Info("agent started", "agent_id", a.id, "cluster_id", a.clusterID,
		"kafka_addr", a.kafkaLn.Addr().String(), "advertised", a.advertisedAddr(),
		"http_addr", a.HTTPAddr().String(), "store", objstore.RedactStoreURL(cfg.storeURL()), "data_dir", cfg.DataDir, "log_flush", cfg.LogFlush,
		"topics", a.topics.Len())
	return a, nil
}

// openDataDir creates the data directory and takes an exclusive lock on it,
// so that two agents never write one log.
func (a *Agent) openDataDir() error {
	if err := os.MkdirAll(a.logDir(), 0o755); err != nil {
		return fmt.Errorf("--data-dir %s: %w", a.cfg.DataDir, err)
	}
	path := filepath.Join(a.cfg.DataDir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("--data-dir %s: %w", a.cfg.DataDir, err)
	}
	if err := vfs.TryLock(f); err != nil {
		f.Close()
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("--data-dir %s is in use by another agent (lock %s: %v)", a.cfg.DataDir, path, err)
		}
		return fmt.Errorf("--data-dir %s: %w", a.cfg.DataDir, err)
	}
	a.lockFile = f
	if a.cfg.LogGroupSync {
		if a.syncer, err = log.NewSyncer(a.fs, a.logDir()); err != nil {
			return fmt.Errorf("--data-dir %s: %w", a.cfg.DataDir, err)
		}
		a.registry.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_log_group_syncs_total",
				Help: "Fsyncs of several partitions done as one syncfs of the data directory's filesystem (--log-group-sync)."},
				func() float64 { return float64(a.syncer.Stats().GroupSyncs) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_log_group_synced_partitions_total",
				Help: "Partition fsyncs that strata_log_group_syncs_total covered: their ratio is the partitions per syncfs."},
				func() float64 { return float64(a.syncer.Stats().GroupedFiles) }))
	}
	return nil
}

// bind opens the Kafka listeners and the HTTP one and works out the
// advertised addresses.
func (a *Agent) bind() (err error) {
	specs, _ := a.cfg.Resolve(a.cfg.TLS.Enabled(), a.cfg.Kafka.SASLEnabledMechanisms) // checked by Validate
	if a.listeners, err = a.cfg.Bind(specs, a.cfg.TLS, a.logger); err != nil {
		return err
	}
	a.kafkaLn, a.advertised = a.listeners[0].Ln, a.listeners[0].Advertised
	return a.http.Listen()
}

// newPeerPool is the pool of connections the transaction coordinators
// and verifying leaders reach other agents with: the inter-agent
// listener's security, as replication's, and idle connections dropped
// well before the other agents' --connections-max-idle would.
func (a *Agent) newPeerPool() (*peer.Pool, error) {
	cfg := peer.DefaultPoolConfig()
	cfg.Name, cfg.Self, cfg.Options = "transactions", a.id, a.peer
	cfg.IdleTimeout = min(cfg.IdleTimeout, a.cfg.Kafka.IdleTimeout/2)
	return peer.NewPool(cfg, a.registry)
}

// openStore opens the bucket, joins (or founds) the cluster, checks that the
// data directory belongs to it and settles the agent id.
func (a *Agent) openStore(ctx context.Context) error {
	url := a.cfg.storeURL()
	shown := objstore.RedactStoreURL(url) // errors end up in logs
	b, err := objstore.Open(ctx, url)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	scheme, _, _ := strings.Cut(url, "://")
	if a.wrapStore != nil {
		b = a.wrapStore(b)
	}
	a.bucket = objstore.NewMetrics(b, a.registry, scheme)
	// Cluster metadata is decided by compare-and-swap: refuse a store that
	// would let two writers both win.
	if err := objstore.CheckConditionalWrites(ctx, a.bucket, "probes/"); err != nil {
		return fmt.Errorf("--store %s: %w", shown, err)
	}
	a.store = metadata.New(a.bucket, a.logger.With("component", "metadata"))
	if a.clusterID, err = a.store.InitCluster(ctx); err != nil {
		return fmt.Errorf("--store %s: %w", shown, err)
	}
	m, ok, err := readMeta(a.fs, a.cfg.DataDir)
	if err != nil {
		return err
	}
	if ok && m.ClusterID != a.clusterID {
		return fmt.Errorf("--data-dir %s belongs to cluster %s but --store %s holds cluster %s; point both at the same cluster",
			a.cfg.DataDir, m.ClusterID, shown, a.clusterID)
	}
	if ok && a.cfg.AgentID >= 0 && m.AgentID != a.cfg.AgentID {
		return fmt.Errorf("%s %d: --data-dir %s holds the data of agent %d", a.cfg.idFlag(), a.cfg.AgentID, a.cfg.DataDir, m.AgentID)
	}
	info := metadata.AgentInfo{KafkaAddr: a.advertisedAddr(), HTTPAddr: a.HTTPAddr().String(), Rack: a.cfg.Rack}
	switch {
	case ok:
		a.id = m.AgentID
		_, err := a.store.Agent(ctx, a.id)
		if errors.Is(err, metadata.ErrUnknownAgent) {
			err = a.store.ClaimAgent(ctx, a.id, info)
		}
		if err != nil {
			return fmt.Errorf("--store %s: %w", shown, err)
		}
		return nil
	case a.cfg.AgentID >= 0:
		a.id = a.cfg.AgentID
		err = a.store.ClaimAgent(ctx, a.id, info)
	default:
		a.id, err = a.store.RegisterAgent(ctx, info)
	}
	if err != nil {
		return fmt.Errorf("--store %s: %w", shown, err)
	}
	return writeMeta(a.fs, a.cfg.DataDir, meta{AgentID: a.id, ClusterID: a.clusterID})
}

func (a *Agent) advertisedAddr() string {
	return a.advertised.String()
}

// KafkaAddr is the address the Kafka listener is bound to (the first
// PLAINTEXT one under --listeners).
func (a *Agent) KafkaAddr() net.Addr { return a.kafkaLn.Addr() }

// ListenerAddr is the address the named Kafka listener is bound to, or nil.
func (a *Agent) ListenerAddr(name string) net.Addr {
	for _, l := range a.listeners {
		if l.Name == name {
			return l.Ln.Addr()
		}
	}
	return nil
}

// HTTPAddr is the address the HTTP listener is bound to.
func (a *Agent) HTTPAddr() net.Addr { return a.http.Addr() }

// Run serves Kafka and HTTP and applies retention until ctx ends or a
// server fails, then closes the agent. It returns nil after a requested
// stop.
func (a *Agent) Run(ctx context.Context) error {
	errc := make(chan error, 1+len(a.listeners))
	close(a.running)
	a.wg.Add(9 + len(a.listeners))
	for _, l := range a.listeners {
		go func() {
			defer a.wg.Done()
			if err := a.kafkaSrv.ServeListener(l.Ln, l.Listener); err != nil {
				errc <- fmt.Errorf("kafka listener %s: %w", l.Name, err)
			}
		}()
	}
	go func() {
		defer a.wg.Done()
		a.usersLoop()
	}()
	go func() {
		defer a.wg.Done()
		if err := a.http.Serve(); err != nil {
			errc <- fmt.Errorf("http listener: %w", err)
		}
	}()
	go func() {
		defer a.wg.Done()
		a.retentionLoop()
	}()
	go func() {
		defer a.wg.Done()
		ctx, cancel := a.stopContext()
		defer cancel()
		a.cleaner.Run(ctx)
	}()
	go func() {
		defer a.wg.Done()
		a.txnLoop()
	}()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.disklessJanitorLoop()
	}()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.disklessCompactionLoop()
	}()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.http.WatchTokens(a.stop) // returns at once without --http-token-file
	}()
	if a.jwks != nil {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.jwks.Run(a.stop)
		}()
	}
	go func() {
		defer a.wg.Done()
		a.runTiering()
	}()
	go func() {
		defer a.wg.Done()
		a.watchMembers()
	}()
	go func() {
		defer a.wg.Done()
		a.reconcileLoop()
	}()
	go func() {
		defer a.wg.Done()
		ctx, cancel := a.stopContext()
		defer cancel()
		a.ctl.Run(ctx)
	}()
	a.ready.Store(true)
	a.ctl.SetMemberState(membership.StateActive)
	var runErr error
	select {
	case <-ctx.Done():
		a.logger.Info("agent stopping")
		switch {
		case a.cfg.DrainTimeout <= 0:
		case a.alone():
			// Nothing to drain to: announcing a drain would only say
			// something that does not happen.
			a.logger.Info("no other agent to drain to; stopping with the replicas here",
				"replicas", len(a.localPartitions()))
			a.ctl.UploadSoleCopies()
		default:
			dctx, cancel := context.WithTimeout(context.Background(), a.cfg.DrainTimeout)
			if err := a.ctl.Drain(dctx); err != nil {
				a.logger.Warn("drain before stopping ended early", "err", err)
				a.ctl.UploadSoleCopies()
			}
			cancel()
		}
	case <-a.stop: // Close was called elsewhere
	case runErr = <-errc:
		a.logger.Error("agent stopping after a server failed", "err", runErr)
	}
	if err := a.Close(); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// Close stops the agent (package comment, "Life cycle"). It may be called
// twice; the second call returns the first one's result.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.ready.Store(false)
		close(a.stop)
		a.leaveMembership() // ends watchMembers
		var errs []error
		if a.diskless != nil {
			// Before the wire server closes: the buffered batches are cut,
			// uploaded and committed, and their producers answered.
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
			if err := a.diskless.Drain(ctx); err != nil {
				errs = append(errs, fmt.Errorf("diskless drain: %w", err))
			}
			cancel()
		}
		if a.kafkaSrv != nil {
			errs = append(errs, a.kafkaSrv.Close())
		}
		if a.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
			if err := a.http.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			}
			cancel()
		}
		a.wg.Wait()
		if a.diskless != nil { // its commits need the coordinators
			errs = append(errs, a.diskless.Close())
			a.disklessPeers.Close()
		}
		if a.coords != nil {
			a.coords.Close()
		}
		if a.peers != nil { // after the coordinators' marker writers and the requests that verify
			a.peers.Close()
		}
		errs = append(errs, a.closePartitions())
		if a.fetchers != nil {
			a.fetchers.Close() // every partition has left them
		}
		if a.tier != nil {
			a.tier.Close()
		}
		a.release()
		a.closeErr = errors.Join(errs...)
		if a.closeErr == nil {
			a.logger.Info("agent stopped cleanly")
		}
	})
	return a.closeErr
}

// closeParallelism bounds the partitions closed at once: each close is an
// fsync and a clean-shutdown mark, which a disk serves faster side by
// side (its queue) than one after another, and an agent of thousands of
// logs must stop within its pod's grace period.
const closeParallelism = 32

// closePartitions closes every open partition log (fsync and clean-shutdown
// mark), closeParallelism at a time. Safe on a half-built agent.
func (a *Agent) closePartitions() error {
	if a.topics == nil {
		return nil
	}
	return a.topics.ClosePartitions(closeParallelism)
}

// release closes what New opened before the servers: listeners not yet
// served, the bucket and the directory lock. Safe on a half-built agent.
func (a *Agent) release() {
	for _, l := range a.listeners {
		l.Ln.Close()
	}
	if a.http != nil {
		a.http.Close()
	}
	if a.bucket != nil {
		a.bucket.Close()
	}
	a.syncer.Close()
	if a.lockFile != nil {
		a.lockFile.Close() // drops the flock
	}
}

// stopContext is a context that ends when the agent stops, for a loop
// that takes one; cancel it when the loop returns.
func (a *Agent) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// every calls fn each interval until the agent stops.
func (a *Agent) every(interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		fn()
	}
}

// retentionLoop applies retention (and drops expired producer state) on
// every partition each RetentionCheckInterval.
func (a *Agent) retentionLoop() { a.every(a.cfg.RetentionCheckInterval, a.applyRetention) }

func (a *Agent) applyRetention() {
	a.coords.ExpireOffsets(context.Background())
	a.coords.ApplyDisklessRetention(context.Background(), time.Now())
	for _, p := range a.localPartitions() {
		n, err := p.LocalLog().ApplyRetention()
		switch {
		case errors.Is(err, log.ErrClosed): // deleted meanwhile
		case err != nil:
			a.logger.Error("retention", "topic", p.Topic(), "partition", p.Index(), "err", err)
		case n > 0:
			a.logger.Info("retention deleted segments", "topic", p.Topic(), "partition", p.Index(), "segments", n)
		}
		a.applyRemoteRetention(context.Background(), p)
	}
}
