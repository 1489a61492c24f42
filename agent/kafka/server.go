// Package kafka is the agent's Kafka wire server: framing, size limits, the
// request header, dispatch to one handler per API key, and ApiVersions.
//
// Frame layout (every integer big endian):
//
//	request:  size int32 | apiKey int16 | apiVersion int16 | correlationId int32 |
//	          clientId nullable string | [tagged fields if flexible] | body
//	response: size int32 | correlationId int32 | [tagged fields if flexible,
//	          except ApiVersions] | body
//
// Each connection is read by one goroutine, which handles its requests in
// order; Produces are pipelined (their fsync and replication waits overlap,
// see serveConn), and a writer goroutine sends the answers in the order of
// the requests, as Kafka does. A frame larger than MaxRequestBytes, or a
// request that does not decode, closes that connection and nothing else.
// A new connection past MaxConnections open, past MaxConnectionsPerIP (or
// its override) open from its address, or over MaxConnectionCreationRate,
// is closed at once (admit.go).
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/internal/oauthbearer"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// Config holds the wire server's settings.
type Config struct {
	// MaxRequestBytes is socket.request.max.bytes: the largest frame accepted.
	MaxRequestBytes int32
	// IdleTimeout closes connections that send nothing for this long, or
	// that take longer than this to read one answer.
	IdleTimeout time.Duration
	// MaxFetchWait caps a fetch's MaxWaitMs.
	MaxFetchWait time.Duration
	// RemoteFetchMaxWait is the least time a Fetch gives reads from the
	// bucket (Kafka's remote.fetch.max.wait.ms), whatever its MaxWaitMs.
	RemoteFetchMaxWait time.Duration
	// MaxConnections is max.connections: connections open at once. Each
	// costs a file descriptor, two goroutines and two 16 KiB buffers; past
	// it a new connection is closed as soon as it is accepted, so the
	// agent keeps descriptors for its logs and its store.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip: connections open at
	// once from one client address, unless MaxConnectionsPerIPOverrides
	// names it. Kafka's default is unlimited; ours (1000) keeps one
	// client that leaks connections, or one host of a misconfigured
	// application, from taking every MaxConnections slot, while leaving
	// room for a few hundred clients behind one NAT.
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides.
	MaxConnectionsPerIPOverrides ConnectionOverrides
	// MaxConnectionCreationRate is max.connection.creation.rate: new
	// connections admitted per second, in bursts of up to one second's
	// worth; 0 is unlimited, Kafka's default. Kafka holds back the accept
	// of connections over its rate; here they are closed at once, like
	// those over the other limits, so a client's reconnect backoff paces
	// it rather than a queue that fills the listen backlog.
	MaxConnectionCreationRate int
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots:
	// the most incremental fetch sessions (KIP-227) kept at once; 0 turns
	// them off. A session costs about 250 bytes per partition
	// (fetchsession.go).
	FetchSessionCacheSlots int
	// FetchSessionEvictionAge is min.incremental.fetch.session.eviction.ms:
	// a session unused this long may be evicted for a new one, and one
	// younger than this is evicted only for a follower's.
	FetchSessionEvictionAge time.Duration
	// DecompressionMaxBytes bounds the bytes that Produce requests of all
	// connections hold decompressed at once while their records are
	// checked (decompress.go); at least twice the least per-batch limit.
	DecompressionMaxBytes int64
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// requests all connections may have read and not yet handled; a
	// connection stops reading until its next frame fits
	// (requestbudget.go). 0 or less is unbounded, Kafka's default.
	QueuedMaxRequestBytes int64
	// AutoCreateTopicsRate is the most topics Metadata requests may
	// create per second, in bursts of up to one second's worth, and
	// AutoCreateTopicsPerRequest the most one request may create; the
	// topics past either are answered LEADER_NOT_AVAILABLE, which clients
	// retry (autocreate.go). Strata's own settings: Kafka bounds neither.
	AutoCreateTopicsRate       int
	AutoCreateTopicsPerRequest int
	// MaxTopicsPerRequest is the most topics a Metadata, CreateTopics,
	// DeleteTopics or CreatePartitions request may name; past it the
	// connection is closed before the request is decoded (topiclimit.go).
	// Strata's own: Kafka has no such limit.
	MaxTopicsPerRequest int
	// SASLEnabledMechanisms is sasl.enabled.mechanisms: what SASL
	// listeners offer, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
	// OAUTHBEARER (which needs OAuthBearer).
	SASLEnabledMechanisms []string
	// OAuthBearer validates OAUTHBEARER tokens; nil when no JWKS is
	// configured.
	OAuthBearer *oauthbearer.Validator
	// ConnectionsMaxReauth is connections.max.reauth.ms (KIP-368): the
	// longest a SASL session lasts before the client must re-authenticate
	// on its connection; 0 sets no limit, though an OAUTHBEARER session
	// still ends when its token expires, as in Kafka (reauth.go).
	ConnectionsMaxReauth time.Duration
	// SASLMaxReceiveBytes is sasl.server.max.receive.size: the largest
	// frame a SASL connection may send before it has authenticated.
	SASLMaxReceiveBytes int32
	// SSLPrincipalMapper is ssl.principal.mapping.rules: how the subject
	// of a client certificate becomes the principal on SSL listeners; nil
	// takes the subject as it is (DEFAULT).
	SSLPrincipalMapper *tlsconfig.PrincipalMapper
	// QuotaWindow is quota.window.num and quota.window.size.seconds: the
	// samples over which client quota rates are measured (quota.go).
	QuotaWindow quota.Window
	// TransactionVersion is the transaction.version level finalized in
	// ApiVersions (apiversions.go): 2 lets clients use KIP-890 part 2, 1
	// keeps them on version 1, for a cluster some of whose agents run a
	// release without part 2 (during a rolling upgrade). Requests of
	// either version are served whatever it is, as in Kafka.
	TransactionVersion int16
}

// DefaultTransactionVersion is the transaction.version finalized unless
// configured: Kafka 4.x's default for a new cluster.
const DefaultTransactionVersion = 2

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxRequestBytes: 100 << 20, IdleTimeout: 10 * time.Minute, MaxFetchWait: 30 * time.Second, RemoteFetchMaxWait: 500 * time.Millisecond,
		MaxConnections: 10000, MaxConnectionsPerIP: 1000, FetchSessionCacheSlots: 1000, FetchSessionEvictionAge: 2 * time.Minute,
		DecompressionMaxBytes: DefaultDecompressionBudget, QueuedMaxRequestBytes: DefaultQueuedMaxRequestBytes,
		AutoCreateTopicsRate: DefaultAutoCreateTopicsRate, AutoCreateTopicsPerRequest: DefaultAutoCreateTopicsPerRequest,
		MaxTopicsPerRequest: DefaultMaxTopicsPerRequest, SASLEnabledMechanisms: DefaultMechanisms(), SASLMaxReceiveBytes: defaultSASLMaxReceive,
		QuotaWindow: quota.DefaultWindow, TransactionVersion: DefaultTransactionVersion}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	if c.MaxRequestBytes < 1024 {
		return fmt.Errorf("socket-request-max-bytes %d: must be at least 1024", c.MaxRequestBytes)
	}
	if c.IdleTimeout <= 0 {
		return fmt.Errorf("connections-max-idle %s: must be positive", c.IdleTimeout)
	}
	if c.MaxConnections < 1 {
		return fmt.Errorf("max-connections %d: must be at least 1", c.MaxConnections)
	}
	if c.MaxConnectionsPerIP < 1 {
		return fmt.Errorf("max-connections-per-ip %d: must be at least 1", c.MaxConnectionsPerIP)
	}
	if c.MaxConnectionCreationRate < 0 {
		return fmt.Errorf("max-connection-creation-rate %d: must be 0 (unlimited) or more", c.MaxConnectionCreationRate)
	}
	if c.FetchSessionCacheSlots < 0 {
		return fmt.Errorf("max-incremental-fetch-session-cache-slots %d: must not be negative", c.FetchSessionCacheSlots)
	}
	if c.AutoCreateTopicsRate < 1 {
		return fmt.Errorf("auto-create-topics-rate %d: must be at least 1 (turn auto-creation off with --auto-create-topics=false)", c.AutoCreateTopicsRate)
	}
	if c.AutoCreateTopicsPerRequest < 1 {
		return fmt.Errorf("auto-create-topics-per-request %d: must be at least 1", c.AutoCreateTopicsPerRequest)
	}
	if c.TransactionVersion < 1 || c.TransactionVersion > transactionVersionMax {
		return fmt.Errorf("transaction-version %d: must be 1 or %d", c.TransactionVersion, transactionVersionMax)
	}
	if c.MaxTopicsPerRequest < 1 {
		return fmt.Errorf("max-topics-per-request %d: must be at least 1", c.MaxTopicsPerRequest)
	}
	if c.FetchSessionEvictionAge < 0 {
		return fmt.Errorf("min-incremental-fetch-session-eviction %s: must not be negative", c.FetchSessionEvictionAge)
	}
	if c.QuotaWindow.Samples < 2 {
		return fmt.Errorf("quota-window-num %d: must be at least 2", c.QuotaWindow.Samples)
	}
	if c.QuotaWindow.Size < time.Second {
		return fmt.Errorf("quota-window-size %s: must be at least 1s", c.QuotaWindow.Size)
	}
	if c.SASLMaxReceiveBytes < 1024 {
		return fmt.Errorf("sasl-server-max-receive-size %d: must be at least 1024", c.SASLMaxReceiveBytes)
	}
	if c.ConnectionsMaxReauth < 0 {
		return fmt.Errorf("connections-max-reauth %s: must be 0 (no limit) or positive", c.ConnectionsMaxReauth)
	}
	for _, m := range c.SASLEnabledMechanisms {
		if !slices.Contains(AllMechanisms(), m) {
			return fmt.Errorf("sasl-enabled-mechanisms: %q is not one of %s", m, strings.Join(AllMechanisms(), ", "))
		}
	}
	return nil
}

// Server serves the Kafka protocol on a listener.
type Server struct {
	cfg Config
	// The backend families (backend.go); New fills unset ones with unset.
	cluster       Cluster
	topics        TopicReader
	topicAdmin    TopicAdmin
	producerIDs   ProducerIDs
	groups        Groups
	txns          Transactions
	reassignments Reassignments
	users         Users
	authz         Authorizer
	quotas        Quotas
	diskless      Diskless
	followers     ReplicaLinks
	// quotaRates meters clients against their quotas (quota.go).
	quotaRates *quota.Tracker
	logger     *slog.Logger
	metrics    *metrics
	// sessions are the fetch sessions; they outlive connections.
	sessions *fetchSessionCache
	// decompression is shared by every connection's Produce requests.
	decompression *decompressionBudget
	// requests bounds the request bytes of all connections (requestbudget.go).
	requests *requestBudget
	// autoCreate paces Metadata's topic creation (autocreate.go).
	autoCreate *autoCreateLimiter
	// links counts followers' fetch connections (replicalinks.go).
	links replicaLinks

	mu     sync.Mutex
	lns    []net.Listener
	conns  map[net.Conn]struct{}
	admit  *admission
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}

	lateTopicChanges atomic.Int32 // requests that may be answered before their topic changes are done (topicchanges.go)
}

// New returns a server on the backend families b (BackendsOf(agent) for
// all of them); Serve starts it.
func New(cfg Config, b Backends, logger *slog.Logger, m *Metrics) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	return &Server{cfg: cfg,
		cluster:       orUnset(b.Cluster, Cluster(unset{"cluster"})),
		topics:        orUnset(b.Topics, TopicReader(unset{"topics"})),
		topicAdmin:    orUnset(b.TopicAdmin, TopicAdmin(unset{"topic admin"})),
		producerIDs:   orUnset(b.ProducerIDs, ProducerIDs(unset{"producer ids"})),
		groups:        orUnset(b.Groups, Groups(unset{"groups"})),
		txns:          orUnset(b.Transactions, Transactions(unset{"transactions"})),
		reassignments: orUnset(b.Reassignments, Reassignments(unset{"reassignments"})),
		users:         orUnset(b.Users, Users(unset{"users"})),
		authz:         orUnset(b.Authorizer, Authorizer(unset{"authorizer"})),
		quotas:        orUnset(b.Quotas, Quotas(unset{"quotas"})),
		diskless:      orUnset(b.Diskless, Diskless(unset{"diskless"})),
		followers:     orUnset(b.Followers, ReplicaLinks(unset{"followers"})),
		quotaRates:    quota.NewTracker(cfg.QuotaWindow),
		logger:        logger, metrics: m.get(), conns: map[net.Conn]struct{}{}, admit: newAdmission(cfg), stop: make(chan struct{}),
		sessions:      newFetchSessionCache(cfg.FetchSessionCacheSlots, cfg.FetchSessionEvictionAge, m.get()),
		decompression: newDecompressionBudget(cfg.DecompressionMaxBytes),
		requests:      newRequestBudget(cfg.QueuedMaxRequestBytes, m.get()),
		autoCreate:    newAutoCreateLimiter(cfg.AutoCreateTopicsRate, cfg.AutoCreateTopicsPerRequest)}
}

// Serve accepts plaintext connections on ln (DefaultListener) until Close.
// It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error { return s.ServeListener(ln, DefaultListener) }

// ServeListener accepts connections on ln as listener l until Close; one
// Server serves several listeners, each from its own call. It returns nil
// after Close.
func (s *Server) ServeListener(ln net.Listener, l Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	var backoff time.Duration
	lastRefusal := map[string]time.Time{}
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if !retryableAccept(err) {
				return err
			}
			// Out of descriptors or memory for a moment: wait rather than
			// stop serving, as the connections that hold them will close.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("accept failed; retrying", "err", err, "retry_in", backoff)
			select {
			case <-s.stop:
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		addr, now := clientAddr(c), time.Now()
		reason := s.admit.admit(addr, now)
		if reason == "" && !s.admitIPQuota(addr, now) {
			s.admit.release(addr)
			reason = refusedIPQuota
		}
		if reason != "" {
			s.mu.Unlock()
			s.metrics.refused(reason) // before the close a client may see
			c.Close()
			// One warning per reason per 10s: a flood must not flood the log.
			if now.Sub(lastRefusal[reason]) > 10*time.Second {
				lastRefusal[reason] = now
				s.logger.Warn("refusing connections", "reason", reason, "client", c.RemoteAddr().String(),
					"max_connections", s.cfg.MaxConnections, "max_connections_per_ip", s.cfg.MaxConnectionsPerIP,
					"max_connection_creation_rate", s.cfg.MaxConnectionCreationRate)
			}
			continue
		}
		s.conns[c] = struct{}{}
		s.metrics.opened(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c, l)
			s.mu.Lock()
			delete(s.conns, c)
			s.admit.release(addr)
			s.mu.Unlock()
			s.metrics.opened(-1)
		}()
	}
}

// retryableAccept reports whether an Accept error passes by itself: a
// timeout, a connection aborted before it was accepted, or a lack of file
// descriptors or buffers.
func retryableAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close stops accepting, closes every connection (in-flight long polls end
// with the connection) and waits for the connection goroutines and for
// topic changes that outlasted their requests (topicchanges.go), whose
// contexts it ends. It may be called twice.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// connContext is a context cancelled when the server stops.
func (s *Server) connContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
