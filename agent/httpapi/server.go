package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/httpconns"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/internal/secretfile"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering"
)

// Host is the agent's live state, which the handlers read at each request.
// The agent root implements it; every method is safe for concurrent use.
type Host interface {
	// Ready reports whether the agent serves Kafka: false before it runs
	// and from its Close on (/readyz).
	Ready() bool
	// Partitions are this agent's replicas, ordered by topic and index.
	Partitions() []*partition.Partition
	// Topics are the served topics, ordered by name.
	Topics() []*dataplane.Topic
	// Authorize is the agent's ACL decision, asked about a client
	// certificate's principal (principal.go) and, with AuthorizeAny (any
	// resource of a type), about a console user's (admin.CanOf).
	Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool
}

// Drainer is the controller's drain (agent/control): StartDrain starts one
// or returns the HTTP status and reason of its refusal; Draining and
// DrainErr report on the last one. Safe for concurrent use.
type Drainer interface {
	StartDrain(force bool, timeout string) (status int, err error)
	Draining() bool
	DrainErr() string
}

// Members is gossip as the console and forwarded drains read it;
// *membership.Membership implements it.
type Members interface {
	Self() membership.Member
	Members() []membership.Member
}

// Deps are what the server knows of its agent once the agent is built:
// its id and Kafka address, and the collaborators the handlers call. The
// server only reads them.
type Deps struct {
	// ID is the agent's id.
	ID int32
	// StartedAt is when the agent started (the console's uptime).
	StartedAt time.Time
	// KafkaAddr is the advertised host:port of the agent's first Kafka
	// listener: shown on the status page, and where the console's Kafka
	// client connects.
	KafkaAddr string
	// InterAgent is how that client connects, as the agent's followers
	// do: the inter-agent listener's TLS and SASL.
	InterAgent peer.Options
	// Store vouches for other agents' HTTP addresses (peer.go).
	Store *metadata.Store
	// Tiering reports the tiered partitions (GET /v1/tiering, console).
	Tiering *tiering.Tierer
	// Drains starts and reports this agent's drain (/v1/drain).
	Drains Drainer
	// Members is gossip; nil without it.
	Members Members
	// Login is where a console user signs in (consoleadmin.go); nil
	// when the agent has no SASL listener.
	Login *ConsoleLogin
}

// Server is the agent's HTTP server (see the package comment for its
// routes, its rules and the order of its calls).
type Server struct {
	cfg      Config
	host     Host
	logger   *slog.Logger
	registry *prometheus.Registry
	deps     Deps // SetDeps'

	// tokens is nil without --http-token-file; tokenWatch keeps it in
	// step with the file while WatchTokens runs.
	tokens     *httpTokens
	tokenWatch *secretfile.Watcher

	ln  net.Listener // bounded by --http-max-connections, then TLS's (Listen)
	srv *http.Server
	// guard decides who may pass (auth.go); nil when the port asks no
	// credentials and refuses nothing. Set by Listen.
	guard *httpGuard
	// peerClient and scheme call the other agents' HTTP ports (tls.go).
	peerClient *http.Client
	scheme     string

	console consoleGate   // one /v1/console gathering at a time (console.go)
	history historyRing   // the console's charts (history.go)
	costs   costSnapshots // the console's cost model over the last minute (costwindow.go)
	browse  browseSlots   // the message browser's pages read at once (records.go)
	// sessions are the console's signed-in users (consolesession.go);
	// logins holds a token per sign-in in progress.
	sessions *consoleSessions
	logins   chan struct{}
}

// New reads --http-token-file, and says at start what the port asks of
// its clients. logger is the agent's; registry is the one /metrics
// serves, which the server registers its connection metrics with.
func New(cfg Config, host Host, logger *slog.Logger, registry *prometheus.Registry) (*Server, error) {
	s := &Server{cfg: cfg, host: host, logger: logger, registry: registry,
		sessions: newConsoleSessions(consoleMaxSessions, consoleSessionIdle, time.Now), logins: make(chan struct{}, consoleLoginsAtOnce)}
	var err error
	if s.tokens, s.tokenWatch, err = s.loadHTTPTokens(); err != nil {
		return nil, err
	}
	return s, nil
}

// Listen binds --http-addr, bounds its connections (agent/httpconns), and
// with --http-tls serves it over TLS; it makes the client this agent
// calls the others' ports with.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("--http-addr %s: %w", s.cfg.Addr, err)
	}
	conns := httpconns.New(ln, s.cfg.MaxConnections, s.logger.With("component", "http"), s.registry)
	s.ln = conns
	if err := s.setupHTTPTLS(); err != nil {
		return err
	}
	s.guard = s.newHTTPGuard()
	s.srv = &http.Server{
		Handler:           s.guard.wrap(s.routes()),
		ReadHeaderTimeout: 10 * time.Second,
		// Every request body here is a few bytes of JSON.
		ReadTimeout:    time.Minute,
		MaxHeaderBytes: 64 << 10,
		IdleTimeout:    s.cfg.IdleTimeout,
		ConnState:      conns.ConnState,
		// No WriteTimeout: /debug/pprof/profile and /trace write after
		// sampling for ?seconds=, 30 by default and often more, and a
		// forwarded drain or the console's fan-out waits on other agents.
	}
	return nil
}

// SetDeps gives the server its agent's id and collaborators, once they
// exist; before Serve.
func (s *Server) SetDeps(d Deps) { s.deps = d }

// Addr is the address the server is bound to; after Listen.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown, and then returns nil. While it serves,
// goroutines it owns sample the agent into the console's history ring
// (history.go) and end idle console sessions (consolesession.go); Serve
// stops them and waits for them before returning, every session ended.
func (s *Server) Serve() error {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.runHistory(stop) })
	wg.Go(func() { s.sessions.run(stop) })
	defer func() {
		close(stop)
		wg.Wait()
	}()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WatchTokens keeps the tokens in step with --http-token-file until stop
// is closed; without a file it returns at once.
func (s *Server) WatchTokens(stop <-chan struct{}) {
	if s.tokenWatch != nil {
		s.tokenWatch.Run(stop)
	}
}

// Shutdown stops accepting, closes idle connections and waits, as long as
// ctx allows, for the requests in flight (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes the listener of a server that will not serve. Safe after a
// failed Listen.
func (s *Server) Close() {
	if s.ln != nil {
		s.ln.Close()
	}
}

// routes are the server's handlers, before the guard (auth.go).
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.host.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /v1/tiering", s.tieringStatus)
	mux.HandleFunc("/v1/drain", s.drainHandler)
	mux.HandleFunc("/{$}", s.statusPage)
	s.registerConsole(mux)
	return mux
}

// statusPage prints the agent and its partitions, one line each. The page
// is served to anyone who reaches the HTTP port, so it shows neither the
// cluster id nor the store URL (which names the bucket and its endpoint);
// both are in the "agent started" log line (docs/operations.md).
func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "strata agent %d  kafka %s  log.flush=%s  ready=%v\n\n",
		s.deps.ID, s.deps.KafkaAddr, s.cfg.LogFlush, s.host.Ready())
	fmt.Fprintf(w, "%-40s %9s %6s %14s %14s %14s %14s\n", "partition", "leader", "epoch", "log-start", "high-water", "log-end", "bytes")
	for _, p := range s.host.Partitions() {
		fmt.Fprintf(w, "%-40s %9d %6d %14d %14d %14d %14d\n", partition.DirName(p.Topic(), p.Index()),
			p.Leader(), p.LeaderEpoch(), p.LogStartOffset(), p.HighWatermark(), p.LogEndOffset(), p.Size())
	}
}

// tieringStatus serves GET /v1/tiering: every tiered partition's local and
// bucket bytes, offsets and upload lag, as JSON (strata tiering status).
func (s *Server) tieringStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		AgentID    int32            `json:"agent_id"`
		Partitions []tiering.Status `json:"partitions"`
	}{s.deps.ID, s.deps.Tiering.Statuses()})
}
