package agent

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/cleaner"
	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/diskless"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/listener"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/placement"
	"github.com/strata-streaming/strata/internal/bytesize"
	"github.com/strata-streaming/strata/internal/scram"
	"github.com/strata-streaming/strata/internal/tlsconfig"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering"
)

// Config is everything an agent is started with. Each field is one setting
// with a flag of the name in its comment; cmd/strata layers STRATA_* variables
// and a YAML file under the flags (see docs/configuration.md).
type Config struct {
	// DataDir (--data-dir) holds meta.json and the partition logs.
	DataDir string
	// Store (--store) is the object store URL; empty means
	// file://<data-dir>/store, the embedded default.
	Store string
	// Config are the Kafka listeners and how agents reach each other
	// (--kafka-addr, --listeners, --inter-agent-*: agent/listener).
	listener.Config
	// AddScram (--add-scram, repeatable) creates SCRAM credentials at
	// start when absent, in kafka-storage's form
	// SCRAM-SHA-256=[name=admin,password=admin-secret].
	AddScram []string
	// Authorizer (--authorizer) is "" (none: every client may do
	// everything) or "acl", Kafka's ACL model (agent/acl).
	Authorizer string
	// SuperUsers (--super-users) is Kafka's super.users, principals
	// separated by semicolons: "User:admin;User:agent".
	SuperUsers string
	// AllowEveryoneIfNoACLFound (--allow-everyone-if-no-acl-found) is
	// allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
	// CredentialsRefreshInterval (--credentials-refresh-interval) is how
	// often the agent re-reads SCRAM credentials from the store.
	CredentialsRefreshInterval time.Duration
	// HTTPAddr (--http-addr) serves /metrics, /healthz, /readyz, the console, drain and, with HTTPPprof, /debug/pprof.
	HTTPAddr string
	// HTTPIdleTimeout (--http-idle-timeout) closes a keep-alive HTTP
	// connection idle this long, so idle clients cannot hold descriptors.
	HTTPIdleTimeout time.Duration
	// HTTPTokenFile (--http-token-file) holds the bearer tokens that
	// state-changing HTTP requests and profiles need (agent/httpapi).
	HTTPTokenFile string
	// HTTPAllowUnauthenticatedChanges (--http-allow-unauthenticated-changes)
	// lets anyone make changes through an HTTP port without credentials
	// although the agent has --authorizer acl (agent/httpapi refuses
	// them otherwise).
	HTTPAllowUnauthenticatedChanges bool
	// HTTPPprof (--http-pprof) serves Go's profiles under /debug/pprof/.
	HTTPPprof bool
	// HTTPTLS (--http-tls) serves the HTTP port over TLS with TLS's
	// certificate, and calls the other agents' ports over HTTPS.
	HTTPTLS bool
	// HTTPTLSClientAuth (--http-tls-client-auth) is ssl.client.auth for
	// the HTTP port: a client certificate's principal may then authorize
	// requests (agent/httpapi).
	HTTPTLSClientAuth tlsconfig.ClientAuth
	// HTTPRequireAuthFor (--http-require-auth-for) names the read-only
	// path groups that need credentials too: metrics, probes, pages, records.
	HTTPRequireAuthFor []string
	// TLS is the agent's certificate and the CAs it trusts
	// (--tls-cert-file, --tls-key-file, --tls-client-ca-file).
	TLS tlsconfig.Files
	// OAuthBearer configures the OAUTHBEARER mechanism (oauthbearer.go).
	OAuthBearer OAuthBearerConfig
	// SSLPrincipalMappingRules (--ssl-principal-mapping-rules) maps client
	// certificate subjects to principals on SSL listeners.
	SSLPrincipalMappingRules string
	// HTTPMaxConnections (--http-max-connections) bounds the HTTP
	// connections open at once; past it a new one replaces the longest
	// idle keep-alive connection, or is closed if none is idle
	// (agent/httpconns).
	HTTPMaxConnections int
	// AgentID (--agent-id) is the agent's int32 id; -1 takes the one in
	// meta.json, or registers the lowest free id in the store.
	AgentID int32
	// AgentIDFromHostname (--agent-id-from-hostname) takes AgentID from
	// the host name's trailing ordinal (strata-3 is 3), so that a
	// StatefulSet pod rescheduled onto an empty volume restores from the
	// bucket as the same agent.
	AgentIDFromHostname bool
	// Rack (--rack) is reported in Metadata.
	Rack string
	// AutoCreateTopics (--auto-create-topics) is auto.create.topics.enable.
	AutoCreateTopics bool
	// NumPartitions (--num-partitions) is the partition count of topics
	// created without one.
	NumPartitions int32
	// DefaultReplicationFactor (--default-replication-factor) is the
	// replication factor of topics created without one; 0 means 3 when at
	// least three agents are alive, else as many as are alive.
	DefaultReplicationFactor int16
	// ReplicaLagTimeMax (--replica-lag-time-max) is
	// replica.lag.time.max.ms: an ISR follower not caught up for this long
	// leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// AutoRebalance (--auto-rebalance) lets the balancer move replicas
	// onto new agents and off draining ones.
	AutoRebalance bool
	// AutoLeaderRebalance (--auto-leader-rebalance) is
	// auto.leader.rebalance.enable: leadership returns to each partition's
	// preferred replica.
	AutoLeaderRebalance bool
	// RebalanceSettle (--rebalance-settle) is how long membership must be
	// unchanged before the balancer acts.
	RebalanceSettle time.Duration
	// RebalanceMaxMoves (--rebalance-max-moves) bounds the moves in flight.
	RebalanceMaxMoves int
	// RebalanceMaxMovesPerAgent (--rebalance-max-moves-per-agent) bounds
	// the replicas one agent receives at once.
	RebalanceMaxMovesPerAgent int
	// ReplaceDeadAgentAfter (--replace-dead-agent-after) is how long an
	// agent holding replicas may be gone from gossip before the balancer
	// moves its replicas to live agents (agent/control, lost.go); 0 never.
	ReplaceDeadAgentAfter time.Duration
	// RebalanceBy (--rebalance-by) is what the balancer evens out: "load"
	// (the agents' measured network, then disk, then counts) or "count"
	// (replicas and preferred leaders).
	RebalanceBy string
	// RebalanceLoadTolerance (--rebalance-load-tolerance) is how far from
	// the mean, as a fraction of it, an agent's load may be before
	// replicas move for it.
	RebalanceLoadTolerance float64
	// LoadReportInterval (--load-report-interval) is how often an agent
	// checks whether to rewrite its load report in the store.
	LoadReportInterval time.Duration
	// NetworkCapacity (--network-capacity) is the bytes per second of
	// produce, consume and replication traffic the agent is sized for;
	// strata_agent_utilization_ratio is its measured traffic over this,
	// and is not exported while it is 0 (unset).
	NetworkCapacity int64
	// DrainTimeout (--drain-timeout) bounds the drain a stopping agent
	// does first (SIGTERM) and the one POST /v1/drain starts; 0 stops
	// without draining.
	DrainTimeout time.Duration
	// LogFlush (--log-flush) is always, interval or never.
	LogFlush string
	// LogFlushInterval (--log-flush-interval) is the fsync period under
	// --log-flush=interval.
	LogFlushInterval time.Duration
	// LogGroupSync (--log-group-sync): partitions that need an fsync at
	// the same time are made durable together by one syncfs(2) of the data
	// directory's filesystem (log.Syncer).
	LogGroupSync bool
	// LogPreallocate (--log-preallocate): under --log-flush=always, keep
	// each active segment's file zero-filled ahead of its end, so that an
	// fsync after an append writes data only (log.Options.Preallocate).
	LogPreallocate bool
	// LogMaxOpenFiles (--log-max-open-files) bounds the segment files all
	// partitions hold open at once (log.FilePool); 0 derives it from the
	// descriptor limit at start (fdlimit.LogFiles).
	LogMaxOpenFiles int
	// LogCleaner holds the --log-cleaner-* settings of compaction
	// (agent/cleaner).
	LogCleaner cleaner.Config
	// RetentionCheckInterval (--retention-check-interval) is how often
	// retention and segment.ms are applied to every partition.
	RetentionCheckInterval time.Duration
	// ProducerIDBlock (--producer-id-block) is how many producer ids the
	// agent reserves in the store at a time.
	ProducerIDBlock int64
	// ShutdownTimeout (--shutdown-timeout) bounds the wait for HTTP
	// requests in flight on SIGTERM. Kafka requests in flight always finish:
	// an append cut short could leave a client unsure of what was written.
	ShutdownTimeout time.Duration
	// OffsetsTopicPartitions (--offsets-topic-partitions) is the partition
	// count of __consumer_offsets when it is created
	// (offsets.topic.num.partitions).
	OffsetsTopicPartitions int32
	// OffsetsTopicSegmentBytes (--offsets-topic-segment-bytes) is the
	// segment.bytes of __consumer_offsets when it is created
	// (offsets.topic.segment.bytes): the log cleaner compacts only sealed
	// segments.
	OffsetsTopicSegmentBytes int32
	// OffsetsRetention (--offsets-retention) is how long committed offsets
	// of a group without members are kept (offsets.retention.minutes).
	OffsetsRetention time.Duration
	// TransactionStatePartitions (--transaction-state-partitions) is the
	// partition count of __transaction_state when it is created
	// (transaction.state.log.num.partitions).
	TransactionStatePartitions int32
	// TransactionMaxTimeout (--transaction-max-timeout) bounds the
	// transaction.timeout.ms a producer may ask for
	// (transaction.max.timeout.ms).
	TransactionMaxTimeout time.Duration
	// TransactionalIDExpiration (--transactional-id-expiration) is how long
	// a transactional id without an open transaction is kept after its
	// last change (transactional.id.expiration.ms).
	TransactionalIDExpiration time.Duration
	// TransactionAbortCheckInterval (--transaction-abort-check-interval) is
	// how often coordinators look for transactions open past their timeout
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms).
	TransactionAbortCheckInterval time.Duration
	// GroupInitialRebalanceDelay (--group-initial-rebalance-delay) holds
	// the first rebalance of an empty group so members starting together
	// join one generation (group.initial.rebalance.delay.ms).
	GroupInitialRebalanceDelay time.Duration
	// GroupConsumerSessionTimeout and GroupConsumerHeartbeatInterval
	// (--group-consumer-session-timeout, --group-consumer-heartbeat-interval)
	// are KIP-848's group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms.
	GroupConsumerSessionTimeout, GroupConsumerHeartbeatInterval time.Duration
	// ReconcileInterval (--reconcile-interval) is how often the agent
	// re-reads the topics from the store, beside the gossip broadcasts
	// that announce changes.
	ReconcileInterval time.Duration
	// Gossip is membership: where this agent gossips and whom it joins
	// (--gossip-addr, --join, ...).
	Gossip membership.Config
	// Tiering holds the upload, cache and remote-read settings; the
	// remote-read wait is Kafka.RemoteFetchMaxWait.
	Tiering tiering.Config
	// Kafka holds the wire server's limits.
	Kafka kafka.Config
	// Console holds the store prices of the console's cost estimate
	// (--cost-put-per-1000, --cost-get-per-1000, --cost-storage-gb-month) and
	// the cross-zone price of its cost model (--cost-cross-zone-per-gb).
	Console console.Prices
	// Diskless holds the diskless data path's --diskless-* settings.
	Diskless diskless.ServiceConfig
	// TopicDefaults are agent-level defaults of topic configs, keyed by the
	// topic config name (--log-retention-ms sets retention.ms, ...). Only
	// flags that were set appear here, so DescribeConfigs can tell an agent
	// default from a built-in one.
	TopicDefaults metadata.Defaults
}

// DefaultConfig is the embedded default: ./data, store under it, Kafka on
// :9092 advertised as localhost:9092, HTTP on :9644.
func DefaultConfig() Config {
	return Config{
		DataDir:                        "data",
		Config:                         listener.DefaultConfig(),
		HTTPAddr:                       ":9644",
		HTTPIdleTimeout:                2 * time.Minute,
		HTTPMaxConnections:             512,
		AgentID:                        -1,
		AutoCreateTopics:               true,
		NumPartitions:                  1,
		DefaultReplicationFactor:       0,
		ReplicaLagTimeMax:              30 * time.Second,
		AutoRebalance:                  true,
		AutoLeaderRebalance:            true,
		RebalanceSettle:                5 * time.Second,
		RebalanceMaxMoves:              8,
		RebalanceMaxMovesPerAgent:      4,
		ReplaceDeadAgentAfter:          10 * time.Minute,
		RebalanceBy:                    "load",
		RebalanceLoadTolerance:         0.10,
		LoadReportInterval:             30 * time.Second,
		DrainTimeout:                   60 * time.Second,
		LogFlush:                       "always",
		LogFlushInterval:               log.DefaultFlushInterval,
		LogGroupSync:                   true,
		LogPreallocate:                 true,
		RetentionCheckInterval:         5 * time.Minute,
		LogCleaner:                     cleaner.DefaultConfig(),
		ProducerIDBlock:                1000,
		ShutdownTimeout:                30 * time.Second,
		OffsetsTopicPartitions:         50,
		OffsetsTopicSegmentBytes:       100 << 20,
		OffsetsRetention:               7 * 24 * time.Hour,
		TransactionStatePartitions:     50,
		TransactionMaxTimeout:          15 * time.Minute,
		TransactionAbortCheckInterval:  10 * time.Second,
		TransactionalIDExpiration:      7 * 24 * time.Hour,
		GroupInitialRebalanceDelay:     3 * time.Second,
		GroupConsumerSessionTimeout:    45 * time.Second,
		GroupConsumerHeartbeatInterval: 5 * time.Second,
		Kafka:                          kafka.DefaultConfig(),
		Tiering:                        tiering.DefaultConfig(),
		Console:                        console.DefaultPrices(),
		Diskless:                       diskless.DefaultServiceConfig(),
		Gossip:                         membership.DefaultConfig(),
		ReconcileInterval:              10 * time.Second,
		CredentialsRefreshInterval:     5 * time.Second,
		TopicDefaults:                  metadata.Defaults{},
		OAuthBearer:                    defaultOAuthBearerConfig(),
	}
}

// topicDefaultFlags maps flags to the topic config whose agent default they
// set, with Kafka's broker setting named in the help.
var topicDefaultFlags = []struct{ flag, config, kafkaName string }{
	{"log-retention-ms", metadata.RetentionMs, "log.retention.ms"},
	{"log-retention-bytes", metadata.RetentionBytes, "log.retention.bytes"},
	{"log-segment-bytes", metadata.SegmentBytes, "log.segment.bytes"},
	{"log-segment-ms", metadata.SegmentMs, "log.roll.ms"},
	{"message-max-bytes", metadata.MaxMessageBytes, "message.max.bytes"},
	{"compression-type", metadata.CompressionType, "compression.type"},
	{"min-insync-replicas", metadata.MinInsyncReplicas, "min.insync.replicas"},
	{"log-message-timestamp-type", metadata.MessageTimestampType, "log.message.timestamp.type"},
}

// RegisterFlags adds a flag for every setting to fs, with c's values as the
// defaults. Call ApplyFlags after parsing to copy the topic defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "Directory for meta.json and the partition logs.")
	fs.StringVar(&c.Store, "store", c.Store, "Object store URL: file:///abs/path, file://./relative/path, s3://bucket/prefix?endpoint=...&region=...&path-style=true (credentials from the AWS environment) or mem://; empty means file://<data-dir>/store.")
	fs.StringVar(&c.KafkaAddr, "kafka-addr", c.KafkaAddr, "Address the Kafka listener binds to.")
	fs.StringVar(&c.AdvertisedKafkaAddr, "advertised-kafka-addr", c.AdvertisedKafkaAddr, "host:port clients are told to connect to; empty means localhost with the listener's port.")
	fs.StringVar(&c.Listeners, "listeners", c.Listeners, "Kafka listeners as NAME://host:port,... (Kafka's listeners), e.g. PLAINTEXT://:9092,SASL_PLAINTEXT://:9093; replaces --kafka-addr. Replication between agents uses --inter-agent-listener, by default the first PLAINTEXT one. See docs/security.md.")
	fs.StringVar(&c.ListenerSecurityProtocolMap, "listener-security-protocol-map", c.ListenerSecurityProtocolMap, "Security protocol of each listener name as NAME:PROTOCOL,... (listener.security.protocol.map); empty maps PLAINTEXT, SASL_PLAINTEXT, SSL and SASL_SSL to themselves. SSL and SASL_SSL need --tls-cert-file and --tls-key-file.")
	fs.StringVar(&c.InterAgentListener, "inter-agent-listener", c.InterAgentListener, "The listener replication between agents uses (inter.broker.listener.name); empty: the first PLAINTEXT one. Over SSL or SASL_SSL followers trust --tls-client-ca-file and present --tls-cert-file.")
	fs.StringVar(&c.InterAgentSASLMechanism, "inter-agent-sasl-mechanism", c.InterAgentSASLMechanism, "SASL mechanism of followers on a SASL --inter-agent-listener (sasl.mechanism.inter.broker.protocol): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.")
	fs.StringVar(&c.InterAgentSASLUser, "inter-agent-sasl-user", c.InterAgentSASLUser, "User followers authenticate as on a SASL --inter-agent-listener.")
	fs.StringVar(&c.InterAgentSASLPasswordFile, "inter-agent-sasl-password-file", c.InterAgentSASLPasswordFile, "File whose first line is --inter-agent-sasl-user's password.")
	fs.StringVar(&c.AdvertisedListeners, "advertised-listeners", c.AdvertisedListeners, "Addresses clients are told to connect to, per listener, as NAME://host:port,... (advertised.listeners); a listener left out is advertised as localhost with its port.")
	fs.StringSliceVar(&c.Kafka.SASLEnabledMechanisms, "sasl-enabled-mechanisms", c.Kafka.SASLEnabledMechanisms, "SASL mechanisms SASL_PLAINTEXT and SASL_SSL listeners offer, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (sasl.enabled.mechanisms). PLAIN checks the password against the user's SCRAM credential; OAUTHBEARER needs --sasl-oauthbearer-jwks-endpoint-url, which adds it to the list.")
	c.OAuthBearer.registerFlags(fs, &c.Kafka)
	fs.Int32Var(&c.Kafka.SASLMaxReceiveBytes, "sasl-server-max-receive-size", c.Kafka.SASLMaxReceiveBytes, "Largest request, in bytes, a SASL listener accepts before the client has authenticated (sasl.server.max.receive.size).")
	fs.StringArrayVar(&c.AddScram, "add-scram", c.AddScram, "Create a SCRAM credential at start if the user has none of that mechanism, as kafka-storage format --add-scram: 'SCRAM-SHA-256=[name=admin,password=admin-secret]' (also iterations=, salt=); repeatable.")
	fs.StringVar(&c.Authorizer, "authorizer", c.Authorizer, "Authorizer of Kafka requests: empty for none (every client may do everything) or acl, Kafka's ACL model managed with CreateAcls/DeleteAcls or strata acl (authorizer.class.name). See docs/security.md.")
	fs.StringVar(&c.SuperUsers, "super-users", c.SuperUsers, "Principals allowed everything whatever the ACLs say, separated by semicolons, e.g. User:admin;User:ANONYMOUS (super.users).")
	fs.BoolVar(&c.AllowEveryoneIfNoACLFound, "allow-everyone-if-no-acl-found", c.AllowEveryoneIfNoACLFound, "Allow every principal a resource that no ACL names (allow.everyone.if.no.acl.found); by default such a resource is denied to all but super users.")
	fs.DurationVar(&c.CredentialsRefreshInterval, "credentials-refresh-interval", c.CredentialsRefreshInterval, "How often the agent re-reads SCRAM credentials from the store, so that a change made through another agent applies here.")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "Address of the HTTP server: /metrics, /healthz, /readyz, the console, drain, and /debug/pprof with --http-pprof.")
	fs.DurationVar(&c.HTTPIdleTimeout, "http-idle-timeout", c.HTTPIdleTimeout, "Close a keep-alive HTTP connection that has been idle this long.")
	fs.StringVar(&c.HTTPTokenFile, "http-token-file", c.HTTPTokenFile, "File of bearer tokens (one per line, at least 22 bytes each) that every HTTP request but GET and HEAD, and /debug/pprof, must carry; shared by the cluster's agents, re-read when it changes. Empty: the HTTP port asks no credentials, and with --authorizer acl refuses those requests (see --http-allow-unauthenticated-changes).")
	fs.BoolVar(&c.HTTPAllowUnauthenticatedChanges, "http-allow-unauthenticated-changes", c.HTTPAllowUnauthenticatedChanges, "Let anyone who reaches the HTTP port drain this agent and make every other change it serves, without credentials, although --authorizer acl guards the Kafka API; without this flag such an agent answers them 401 until --http-token-file or certificate principals are set. It changes nothing when the port takes credentials.")
	fs.BoolVar(&c.HTTPTLS, "http-tls", c.HTTPTLS, "Serve the HTTP port over TLS with --tls-cert-file and --tls-key-file, and call the other agents' HTTP ports over HTTPS trusting --tls-client-ca-file (else the system's CAs).")
	fs.Var(clientAuthFlag{&c.HTTPTLSClientAuth}, "http-tls-client-auth", "Client certificates on the HTTP port with --http-tls: none, requested (verified against --tls-client-ca-file when given) or required (probes and scrapers then need one too). With --authorizer acl, a certificate whose principal (--ssl-principal-mapping-rules) is allowed ALTER on the CLUSTER may do what a token may.")
	fs.StringSliceVar(&c.HTTPRequireAuthFor, "http-require-auth-for", c.HTTPRequireAuthFor, "Read-only HTTP paths that need a token or a certificate principal too, of metrics (/metrics), probes (/healthz, /readyz), pages (the status page, the console, GET /v1/...) and records (the console's message browser, GET /v1/console/records; always restricted with --authorizer acl); empty: only changes and profiles do.")
	fs.StringVar(&c.TLS.CertFile, "tls-cert-file", c.TLS.CertFile, "PEM certificate chain of the agent's TLS listeners, leaf first; re-read when renewed.")
	fs.StringVar(&c.TLS.KeyFile, "tls-key-file", c.TLS.KeyFile, "PEM private key of --tls-cert-file.")
	fs.Var(clientAuthFlag{&c.TLS.ClientAuth}, "tls-client-auth", "Client certificates on SSL and SASL_SSL listeners (ssl.client.auth): none, requested (verified when given) or required; the principal on SSL listeners is the certificate's subject, mapped by --ssl-principal-mapping-rules.")
	fs.StringVar(&c.SSLPrincipalMappingRules, "ssl-principal-mapping-rules", c.SSLPrincipalMappingRules, "Kafka's ssl.principal.mapping.rules: RULE:pattern/replacement/[LU],...,DEFAULT, patterns in Go's regexp syntax; a subject no rule maps is refused.")
	fs.StringVar(&c.TLS.ClientCAFile, "tls-client-ca-file", c.TLS.ClientCAFile, "PEM CAs the agent trusts: those that sign client certificates, and the other agents' when it calls them over TLS.")
	fs.BoolVar(&c.HTTPPprof, "http-pprof", c.HTTPPprof, "Serve Go's profiles under /debug/pprof/ on the HTTP port (behind --http-token-file when set).")
	fs.IntVar(&c.HTTPMaxConnections, "http-max-connections", c.HTTPMaxConnections, "Most HTTP connections open at once; past it a new one takes the place of the longest idle keep-alive connection, or is closed as soon as accepted when none is idle.")
	fs.Int32Var(&c.AgentID, "agent-id", c.AgentID, "Agent id; -1 reuses the id in meta.json or registers the lowest free one.")
	fs.BoolVar(&c.AgentIDFromHostname, "agent-id-from-hostname", c.AgentIDFromHostname, "Take the agent id from the host name's trailing ordinal (strata-3 is agent 3), as a Kubernetes StatefulSet names its pods: a pod rescheduled onto an empty volume comes back as the same agent and restores its partitions from the bucket. Not with --agent-id.")
	fs.StringVar(&c.Rack, "rack", c.Rack, "Rack (availability zone) of this agent, reported to clients.")
	fs.BoolVar(&c.AutoCreateTopics, "auto-create-topics", c.AutoCreateTopics, "Create a topic when a client asks for metadata of one that does not exist (auto.create.topics.enable).")
	fs.Int32Var(&c.NumPartitions, "num-partitions", c.NumPartitions, "Partition count of topics created without one (num.partitions).")
	fs.Int16Var(&c.DefaultReplicationFactor, "default-replication-factor", c.DefaultReplicationFactor, "Replication factor of topics created without one; 0 means 3 when at least three agents are alive, else the number alive.")
	fs.BoolVar(&c.AutoRebalance, "auto-rebalance", c.AutoRebalance, "Move replicas onto agents that join and off agents that drain, without an operator.")
	fs.BoolVar(&c.AutoLeaderRebalance, "auto-leader-rebalance", c.AutoLeaderRebalance, "Hand leadership back to each partition's preferred replica (auto.leader.rebalance.enable).")
	fs.DurationVar(&c.RebalanceSettle, "rebalance-settle", c.RebalanceSettle, "How long membership must be unchanged before replicas are moved.")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "On SIGTERM, first move this agent's leaderships and replicas to the others for up to this long; 0 stops at once.")
	fs.IntVar(&c.RebalanceMaxMovesPerAgent, "rebalance-max-moves-per-agent", c.RebalanceMaxMovesPerAgent, "Most replicas one agent receives at once.")
	fs.DurationVar(&c.ReplaceDeadAgentAfter, "replace-dead-agent-after", c.ReplaceDeadAgentAfter, "How long an agent that holds replicas may be gone from gossip before the balancer (with --auto-rebalance) moves its replicas to live agents, restoring each partition's replication factor; a partition whose replicas were all on such agents gets a new one only with unclean.leader.election.enable. 0 never replaces.")
	fs.IntVar(&c.RebalanceMaxMoves, "rebalance-max-moves", c.RebalanceMaxMoves, "Most partition moves in flight at once, cluster-wide.")
	fs.StringVar(&c.RebalanceBy, "rebalance-by", c.RebalanceBy, "What the balancer evens out across agents: load (the bytes per second each agent's replicas receive and send, then their disk bytes, then replica and leader counts) or count (replicas and preferred leaders only).")
	fs.Float64Var(&c.RebalanceLoadTolerance, "rebalance-load-tolerance", c.RebalanceLoadTolerance, "With --rebalance-by load, how far from the mean, as a fraction of it, an agent's network or disk load may be before replicas move for it; balancing then aims at half of it.")
	fs.DurationVar(&c.LoadReportInterval, "load-report-interval", c.LoadReportInterval, "With --rebalance-by load, how often the agent checks whether its replicas' load changed enough to rewrite its report in the store (at least every 5 minutes it does).")
	fs.Var(bytesize.NewRateFlag(&c.NetworkCapacity), "network-capacity", "Bytes per second of produce, consume and replication traffic this agent is sized for, as bytes or with a unit (500MiB, 1.25GB, 500MiB/s): strata_agent_utilization_ratio, an autoscaler's signal, is the agent's measured traffic (strata_agent_network_bytes_per_second) divided by it. 0 leaves it unset, and the ratio is not exported. See docs/operations.md, \"Autoscaling\".")
	fs.DurationVar(&c.ReplicaLagTimeMax, "replica-lag-time-max", c.ReplicaLagTimeMax, "A follower not caught up with its leader for this long leaves the ISR (replica.lag.time.max.ms).")
	fs.StringVar(&c.LogFlush, "log-flush", c.LogFlush, "When appends are fsynced before they are acknowledged: always, interval or never.")
	fs.DurationVar(&c.LogFlushInterval, "log-flush-interval", c.LogFlushInterval, "How often the log is fsynced under --log-flush=interval.")
	fs.BoolVar(&c.LogPreallocate, "log-preallocate", c.LogPreallocate, "Under --log-flush=always, keep each partition's active segment file written with zeros ahead of its end (64 KiB, doubling up to 64 MiB while appends catch up), so that fsyncs after appends skip the filesystem journal; turn off on thin-provisioned disks.")
	fs.IntVar(&c.LogMaxOpenFiles, "log-max-open-files", c.LogMaxOpenFiles, "Most partition segment files open at once; past it the least recently used idle ones are closed and reopened when next needed. 0 takes the open-file limit (RLIMIT_NOFILE) less --max-connections less 256, but at least a quarter of the limit.")
	fs.BoolVar(&c.LogGroupSync, "log-group-sync", c.LogGroupSync, "Make partitions that need an fsync at the same time durable with one syncfs of the data directory's filesystem; turn off when that filesystem has other busy writers.")
	fs.BoolVar(&c.LogCleaner.Enable, "log-cleaner-enable", c.LogCleaner.Enable, "Run the log cleaner, which keeps only the latest record of each key in topics with cleanup.policy=compact (log.cleaner.enable); without it they are never compacted.")
	fs.Int64Var(&c.LogCleaner.IOMaxBytesPerSecond, "log-cleaner-io-max-bytes-per-second", c.LogCleaner.IOMaxBytesPerSecond, "Most bytes per second the log cleaner reads and writes together; 0 is unlimited (log.cleaner.io.max.bytes.per.second).")
	fs.Int64Var(&c.LogCleaner.DedupeBufferSize, "log-cleaner-dedupe-buffer-size", c.LogCleaner.DedupeBufferSize, "Memory, in bytes, of the log cleaner's key-to-offset map, allocated at its first pass: 24 bytes a key, and a pass whose dirty keys do not fit cleans up to where the map filled (log.cleaner.dedupe.buffer.size).")
	fs.DurationVar(&c.LogCleaner.Backoff, "log-cleaner-backoff", c.LogCleaner.Backoff, "How long the log cleaner waits when no compacted partition needs cleaning (log.cleaner.backoff.ms).")
	fs.DurationVar(&c.RetentionCheckInterval, "retention-check-interval", c.RetentionCheckInterval, "How often retention is applied to every partition (log.retention.check.interval.ms).")
	fs.Int64Var(&c.ProducerIDBlock, "producer-id-block", c.ProducerIDBlock, "Producer ids reserved in the store at a time.")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "Longest wait for HTTP requests in flight when the agent stops (Kafka requests in flight always finish first).")
	fs.Int32Var(&c.OffsetsTopicPartitions, "offsets-topic-partitions", c.OffsetsTopicPartitions, "Partitions of __consumer_offsets when it is created (offsets.topic.num.partitions).")
	fs.Int32Var(&c.OffsetsTopicSegmentBytes, "offsets-topic-segment-bytes", c.OffsetsTopicSegmentBytes, "segment.bytes of __consumer_offsets when it is created; the log cleaner compacts only sealed segments (offsets.topic.segment.bytes).")
	fs.DurationVar(&c.OffsetsRetention, "offsets-retention", c.OffsetsRetention, "How long committed offsets of a group without members are kept (offsets.retention.minutes).")
	fs.Int32Var(&c.TransactionStatePartitions, "transaction-state-partitions", c.TransactionStatePartitions, "Partitions of __transaction_state when it is created (transaction.state.log.num.partitions).")
	fs.DurationVar(&c.TransactionMaxTimeout, "transaction-max-timeout", c.TransactionMaxTimeout, "The longest transaction.timeout.ms a producer may ask for (transaction.max.timeout.ms).")
	fs.DurationVar(&c.TransactionalIDExpiration, "transactional-id-expiration", c.TransactionalIDExpiration, "How long a transactional id without an open transaction is kept after its last change before it is forgotten (transactional.id.expiration.ms).")
	fs.DurationVar(&c.TransactionAbortCheckInterval, "transaction-abort-check-interval", c.TransactionAbortCheckInterval, "How often transactions open longer than their timeout are looked for and aborted (transaction.abort.timed.out.transaction.cleanup.interval.ms).")
	fs.DurationVar(&c.GroupConsumerSessionTimeout, "group-consumer-session-timeout", c.GroupConsumerSessionTimeout, "A KIP-848 group member that sends no heartbeat for this long is removed (group.consumer.session.timeout.ms).")
	fs.DurationVar(&c.GroupConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", c.GroupConsumerHeartbeatInterval, "How often KIP-848 group members are asked to heartbeat (group.consumer.heartbeat.interval.ms).")
	fs.DurationVar(&c.GroupInitialRebalanceDelay, "group-initial-rebalance-delay", c.GroupInitialRebalanceDelay, "How long the first rebalance of an empty group waits for more members (group.initial.rebalance.delay.ms).")
	fs.Int32Var(&c.Kafka.MaxRequestBytes, "socket-request-max-bytes", c.Kafka.MaxRequestBytes, "Largest Kafka request frame accepted, in bytes (socket.request.max.bytes).")
	fs.DurationVar(&c.Kafka.IdleTimeout, "connections-max-idle", c.Kafka.IdleTimeout, "Close Kafka connections idle for this long (connections.max.idle.ms).")
	fs.IntVar(&c.Kafka.MaxConnections, "max-connections", c.Kafka.MaxConnections, "Most Kafka connections open at once; past it new ones are closed as soon as accepted (max.connections).")
	fs.IntVar(&c.Kafka.MaxConnectionsPerIP, "max-connections-per-ip", c.Kafka.MaxConnectionsPerIP, "Most Kafka connections open at once from one client IP address; past it new ones from that address are closed as soon as accepted (max.connections.per.ip).")
	fs.Var(&c.Kafka.MaxConnectionsPerIPOverrides, "max-connections-per-ip-overrides", "Per-address exceptions to --max-connections-per-ip, as ip:count,ip:count (IPv6 in brackets); a count of 0 refuses the address (max.connections.per.ip.overrides).")
	fs.IntVar(&c.Kafka.MaxConnectionCreationRate, "max-connection-creation-rate", c.Kafka.MaxConnectionCreationRate, "New Kafka connections accepted per second, in bursts of up to a second's worth; past it new ones are closed as soon as accepted; 0 is unlimited (max.connection.creation.rate).")
	fs.IntVar(&c.Kafka.QuotaWindow.Samples, "quota-window-num", c.Kafka.QuotaWindow.Samples, "Samples over which client quota rates are measured (quota.window.num); a client starting from idle may use this many samples, less one, of its quota at once.")
	fs.DurationVar(&c.Kafka.QuotaWindow.Size, "quota-window-size", c.Kafka.QuotaWindow.Size, "Length of one client quota sample (quota.window.size.seconds).")
	fs.IntVar(&c.Kafka.FetchSessionCacheSlots, "max-incremental-fetch-session-cache-slots", c.Kafka.FetchSessionCacheSlots, "Most incremental fetch sessions (KIP-227) kept at once, each about 250 bytes per partition it holds; 0 turns fetch sessions off (max.incremental.fetch.session.cache.slots).")
	fs.DurationVar(&c.Kafka.FetchSessionEvictionAge, "min-incremental-fetch-session-eviction", c.Kafka.FetchSessionEvictionAge, "A fetch session unused this long may be evicted for a new one, and a consumer's session younger than this is evicted only for a follower's (min.incremental.fetch.session.eviction.ms).")
	fs.Int64Var(&c.Kafka.DecompressionMaxBytes, "produce-decompression-max-bytes", c.Kafka.DecompressionMaxBytes, "Most bytes that produced compressed batches of all connections may hold decompressed at once, while their records are checked; a batch waits for room until its request times out. Each compressed batch takes its own limit, 16 times its topic's max.message.bytes and at least 16 MiB, and takes twice that from this budget while it is checked, so this must be at least 32 MiB.")
	fs.Int64Var(&c.Kafka.QueuedMaxRequestBytes, "queued-max-request-bytes", c.Kafka.QueuedMaxRequestBytes, "Most bytes of Kafka requests that all connections may have read and not yet answered (a Produce until its batches are in the log); a connection whose next request does not fit stops reading until it does, and one larger than this is read once nothing else is held; 0 or less is unbounded, Kafka's default (queued.max.request.bytes).")
	fs.Int16Var(&c.Kafka.TransactionVersion, "transaction-version", c.Kafka.TransactionVersion, "The transaction.version feature level finalized in ApiVersions: 2 (as Kafka 4.x) lets clients that know KIP-890 part 2 bump the producer epoch at every transaction and skip AddPartitionsToTxn; 1 keeps every client on transaction version 1, for a cluster some of whose agents run a release without part 2.")
	fs.IntVar(&c.Kafka.MaxTopicsPerRequest, "max-topics-per-request", c.Kafka.MaxTopicsPerRequest, "Most topics one Metadata, CreateTopics, DeleteTopics or CreatePartitions request may name; the connection of a request naming more is closed before the request is decoded.")
	fs.IntVar(&c.Kafka.AutoCreateTopicsRate, "auto-create-topics-rate", c.Kafka.AutoCreateTopicsRate, "Most topics Metadata requests may auto-create per second on this agent, in bursts of up to a second's worth; the topics past it are answered LEADER_NOT_AVAILABLE, which clients retry.")
	fs.IntVar(&c.Kafka.AutoCreateTopicsPerRequest, "auto-create-topics-per-request", c.Kafka.AutoCreateTopicsPerRequest, "Most topics one Metadata request may auto-create; the topics past it are answered LEADER_NOT_AVAILABLE, which clients retry.")
	fs.DurationVar(&c.Kafka.MaxFetchWait, "fetch-max-wait", c.Kafka.MaxFetchWait, "Longest time a Fetch long-polls, whatever the client asks.")
	c.Gossip.RegisterFlags(fs)
	fs.DurationVar(&c.ReconcileInterval, "reconcile-interval", c.ReconcileInterval, "How often the agent re-reads topics from the store, to pick up changes other agents made whose gossip announcement it missed.")
	fs.DurationVar(&c.Kafka.RemoteFetchMaxWait, "remote-fetch-max-wait", c.Kafka.RemoteFetchMaxWait, "Least time a Fetch waits for reads from the store before it answers without them (remote.fetch.max.wait.ms).")
	fs.DurationVar(&c.Tiering.Interval, "tiering-interval", c.Tiering.Interval, "How often sealed segments are looked for and uploaded.")
	fs.IntVar(&c.Tiering.Concurrency, "tiering-upload-concurrency", c.Tiering.Concurrency, "Partitions uploading to the store at once.")
	fs.Int64Var(&c.Tiering.UploadRate, "tiering-upload-rate", c.Tiering.UploadRate, "Upload bandwidth limit in bytes per second; 0 means none.")
	fs.Int64Var(&c.Tiering.ChunkBytes, "remote-chunk-bytes", c.Tiering.ChunkBytes, "Size of the ranged GETs of remote reads, and the unit of the cache.")
	fs.Int64Var(&c.Tiering.CacheBytes, "remote-cache-bytes", c.Tiering.CacheBytes, "Memory for cached chunks of remote segments.")
	fs.DurationVar(&c.Tiering.OrphanGrace, "orphan-grace", c.Tiering.OrphanGrace, "Objects in the store that no manifest names are deleted once this old.")
	fs.DurationVar(&c.Tiering.CompactionGrace, "remote-compaction-grace", c.Tiering.CompactionGrace, "Objects that a remote compaction replaced are deleted from the store once replaced this long; readers of the older manifest may use them until then (file.delete.delay.ms).")
	c.Console.RegisterFlags(fs)
	c.Diskless.RegisterFlags(fs)
	for _, f := range topicDefaultFlags {
		d, _ := metadata.LookupTopicConfig(f.config)
		fs.String(f.flag, d.Default, fmt.Sprintf("Default %s of topics (%s). %s", f.config, f.kafkaName, d.Doc))
	}
}

// ApplyFlags copies the topic-default flags that were set on fs into
// c.TopicDefaults.
func (c *Config) ApplyFlags(fs *pflag.FlagSet) {
	if c.TopicDefaults == nil {
		c.TopicDefaults = metadata.Defaults{}
	}
	for _, f := range topicDefaultFlags {
		if fl := fs.Lookup(f.flag); fl != nil && fl.Changed {
			c.TopicDefaults[f.config] = fl.Value.String()
		}
	}
}

// Validate names the first bad setting by its flag.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if err := c.TLS.Validate(); err != nil {
		return err
	}
	if _, err := tlsconfig.ParsePrincipalRules(c.SSLPrincipalMappingRules); err != nil {
		return fmt.Errorf("--ssl-principal-mapping-rules: %w", err)
	}
	if err := c.httpConfig().Validate(); err != nil {
		return err
	}
	for _, a := range []struct{ flag, addr string }{{"kafka-addr", c.KafkaAddr}, {"http-addr", c.HTTPAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("--%s %q: want host:port (%v)", a.flag, a.addr, err)
		}
	}
	if _, err := c.Resolve(c.TLS.Enabled(), c.Kafka.SASLEnabledMechanisms); err != nil {
		return err
	}
	for _, spec := range c.AddScram {
		if _, err := scram.ParseBootstrap(spec); err != nil {
			return fmt.Errorf("--add-scram: %w", err)
		}
	}
	switch c.Authorizer {
	case authorizerNone:
		if c.SuperUsers != "" || c.AllowEveryoneIfNoACLFound {
			return errors.New("--super-users and --allow-everyone-if-no-acl-found need --authorizer acl")
		}
	case authorizerACL:
		if _, err := acl.ParseSuperUsers(c.SuperUsers); err != nil {
			return fmt.Errorf("--super-users: %w", err)
		}
	default:
		return fmt.Errorf("--authorizer %q: want acl, or empty for none", c.Authorizer)
	}
	switch {
	case c.AgentID < -1:
		return fmt.Errorf("--agent-id %d: must be -1 (automatic) or a non-negative id", c.AgentID)
	case c.AgentIDFromHostname && c.AgentID >= 0:
		return fmt.Errorf("--agent-id-from-hostname and --agent-id %d: set one", c.AgentID)
	case c.NumPartitions < 1:
		return fmt.Errorf("--num-partitions %d: must be at least 1", c.NumPartitions)
	case c.DefaultReplicationFactor < 0:
		return fmt.Errorf("--default-replication-factor %d: must be 0 (automatic) or at least 1", c.DefaultReplicationFactor)
	case c.HTTPIdleTimeout <= 0:
		return fmt.Errorf("--http-idle-timeout %v: must be positive", c.HTTPIdleTimeout)
	case c.HTTPMaxConnections < 1:
		return fmt.Errorf("--http-max-connections %d: must be at least 1", c.HTTPMaxConnections)
	case c.DrainTimeout < 0:
		return fmt.Errorf("--drain-timeout %v: must not be negative", c.DrainTimeout)
	case c.RebalanceSettle < 0:
		return fmt.Errorf("--rebalance-settle %v: must not be negative", c.RebalanceSettle)
	case c.ReplaceDeadAgentAfter < 0:
		return fmt.Errorf("--replace-dead-agent-after %v: must not be negative (0 never replaces)", c.ReplaceDeadAgentAfter)
	case c.RebalanceMaxMoves < 1:
		return fmt.Errorf("--rebalance-max-moves %d: must be at least 1", c.RebalanceMaxMoves)
	case c.RebalanceMaxMovesPerAgent < 1:
		return fmt.Errorf("--rebalance-max-moves-per-agent %d: must be at least 1", c.RebalanceMaxMovesPerAgent)
	case c.RebalanceBy != "load" && c.RebalanceBy != "count":
		return fmt.Errorf("--rebalance-by %q: want load or count", c.RebalanceBy)
	case !(c.RebalanceLoadTolerance > 0 && c.RebalanceLoadTolerance < 1):
		return fmt.Errorf("--rebalance-load-tolerance %v: must be above 0 and below 1", c.RebalanceLoadTolerance)
	case c.LoadReportInterval < time.Second:
		return fmt.Errorf("--load-report-interval %v: must be at least 1s", c.LoadReportInterval)
	case c.NetworkCapacity < 0:
		return fmt.Errorf("--network-capacity %d: must not be negative (0 leaves it unset)", c.NetworkCapacity)
	case c.ReplicaLagTimeMax < 10*time.Millisecond:
		return fmt.Errorf("--replica-lag-time-max %v: must be at least 10ms", c.ReplicaLagTimeMax)
	case c.LogMaxOpenFiles < 0:
		return fmt.Errorf("--log-max-open-files %d: must be 0 (automatic) or positive", c.LogMaxOpenFiles)
	case c.LogFlushInterval <= 0:
		return fmt.Errorf("--log-flush-interval %v: must be positive", c.LogFlushInterval)
	case c.LogCleaner.Validate() != nil:
		return c.LogCleaner.Validate()
	case c.RetentionCheckInterval <= 0:
		return fmt.Errorf("--retention-check-interval %v: must be positive", c.RetentionCheckInterval)
	case c.ProducerIDBlock < 1 || c.ProducerIDBlock > metadata.DefaultSettings().MaxProducerIDBlock:
		return fmt.Errorf("--producer-id-block %d: must be in [1, %d]", c.ProducerIDBlock, metadata.DefaultSettings().MaxProducerIDBlock)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout %v: must be positive", c.ShutdownTimeout)
	case c.OffsetsTopicSegmentBytes < 14:
		return fmt.Errorf("--offsets-topic-segment-bytes %d: must be at least 14", c.OffsetsTopicSegmentBytes)
	case c.OffsetsTopicPartitions < 1 || c.OffsetsTopicPartitions > 1000:
		return fmt.Errorf("--offsets-topic-partitions %d: must be in [1, 1000]", c.OffsetsTopicPartitions)
	case c.TransactionStatePartitions < 1 || c.TransactionStatePartitions > 1000:
		return fmt.Errorf("--transaction-state-partitions %d: must be in [1, 1000]", c.TransactionStatePartitions)
	case c.TransactionMaxTimeout < time.Second:
		return fmt.Errorf("--transaction-max-timeout %v: must be at least 1s", c.TransactionMaxTimeout)
	case c.TransactionalIDExpiration < time.Second:
		return fmt.Errorf("--transactional-id-expiration %v: must be at least 1s", c.TransactionalIDExpiration)
	case c.TransactionAbortCheckInterval < 10*time.Millisecond:
		return fmt.Errorf("--transaction-abort-check-interval %v: must be at least 10ms", c.TransactionAbortCheckInterval)
	case c.OffsetsRetention < time.Minute:
		return fmt.Errorf("--offsets-retention %v: must be at least 1m", c.OffsetsRetention)
	case c.GroupInitialRebalanceDelay < 0:
		return fmt.Errorf("--group-initial-rebalance-delay %v: must not be negative", c.GroupInitialRebalanceDelay)
	case c.GroupConsumerHeartbeatInterval < 10*time.Millisecond:
		return fmt.Errorf("--group-consumer-heartbeat-interval %v: must be at least 10ms", c.GroupConsumerHeartbeatInterval)
	case c.GroupConsumerSessionTimeout <= c.GroupConsumerHeartbeatInterval:
		return fmt.Errorf("--group-consumer-session-timeout %v: must be longer than --group-consumer-heartbeat-interval %v", c.GroupConsumerSessionTimeout, c.GroupConsumerHeartbeatInterval)
	case c.CredentialsRefreshInterval < 100*time.Millisecond:
		return fmt.Errorf("--credentials-refresh-interval %v: must be at least 100ms", c.CredentialsRefreshInterval)
	case c.ReconcileInterval < 100*time.Millisecond:
		return fmt.Errorf("--reconcile-interval %v: must be at least 100ms", c.ReconcileInterval)
	case c.Gossip.Validate() != nil:
		return c.Gossip.Validate()
	case c.Console.Validate() != nil:
		return c.Console.Validate()
	case c.Diskless.Validate() != nil:
		return c.Diskless.Validate()
	case c.Tiering.OrphanGrace < 2*c.Diskless.Writer.CommitTimeout:
		return fmt.Errorf("--orphan-grace %v: must be at least twice --diskless-commit-timeout (%v), so no object is collected while its commit may still land", c.Tiering.OrphanGrace, c.Diskless.Writer.CommitTimeout)
	case c.Tiering.Interval <= 0:
		return fmt.Errorf("--tiering-interval %v: must be positive", c.Tiering.Interval)
	case c.Tiering.Concurrency < 1:
		return fmt.Errorf("--tiering-upload-concurrency %d: must be at least 1", c.Tiering.Concurrency)
	case c.Tiering.UploadRate < 0:
		return fmt.Errorf("--tiering-upload-rate %d: must not be negative", c.Tiering.UploadRate)
	case c.Tiering.ChunkBytes < 4<<10 || c.Tiering.ChunkBytes > 256<<20:
		return fmt.Errorf("--remote-chunk-bytes %d: must be in [4096, 268435456]", c.Tiering.ChunkBytes)
	case c.Tiering.CacheBytes < c.Tiering.ChunkBytes:
		return fmt.Errorf("--remote-cache-bytes %d: must hold at least one chunk (--remote-chunk-bytes %d)", c.Tiering.CacheBytes, c.Tiering.ChunkBytes)
	case c.Tiering.CompactionGrace <= 0:
		return fmt.Errorf("--remote-compaction-grace %v: must be positive", c.Tiering.CompactionGrace)
	case c.Tiering.OrphanGrace < time.Minute:
		return fmt.Errorf("--orphan-grace %v: must be at least 1m (an upload in progress looks like an orphan)", c.Tiering.OrphanGrace)
	case c.Kafka.RemoteFetchMaxWait <= 0:
		return fmt.Errorf("--remote-fetch-max-wait %v: must be positive", c.Kafka.RemoteFetchMaxWait)
	case c.Kafka.MaxFetchWait <= 0:
		return fmt.Errorf("--fetch-max-wait %v: must be positive", c.Kafka.MaxFetchWait)
	case c.Kafka.DecompressionMaxBytes < 32<<20:
		return fmt.Errorf("--produce-decompression-max-bytes %d: must be at least 33554432 (32 MiB), what one batch at its least limit takes", c.Kafka.DecompressionMaxBytes)
	}
	if _, err := log.ParseFlushPolicy(c.LogFlush); err != nil {
		return fmt.Errorf("--log-flush %q: want always, interval or never", c.LogFlush)
	}
	if err := c.validateOAuthBearer(); err != nil {
		return err
	}
	if err := c.Kafka.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	for _, f := range topicDefaultFlags {
		v, ok := c.TopicDefaults[f.config]
		if !ok {
			continue
		}
		d, _ := metadata.LookupTopicConfig(f.config)
		if err := d.Validate(v); err != nil {
			return fmt.Errorf("--%s %q: %v", f.flag, v, err)
		}
	}
	if err := c.TopicDefaults.Validate(); err != nil {
		return err
	}
	return nil
}

// storeURL is the effective --store.
func (c Config) storeURL() string {
	if c.Store != "" {
		return c.Store
	}
	abs, err := filepath.Abs(filepath.Join(c.DataDir, "store"))
	if err != nil {
		abs = filepath.Join(c.DataDir, "store")
	}
	return "file://" + abs
}

// loadBalance is the balancer's placement.Balance: the default floors
// with --rebalance-load-tolerance.
func (c Config) loadBalance() placement.Balance {
	b := placement.DefaultBalance()
	b.Tolerance = c.RebalanceLoadTolerance
	return b
}

// clientAuthFlag is --tls-client-auth; Validate checks the value.
type clientAuthFlag struct{ p *tlsconfig.ClientAuth }

func (f clientAuthFlag) String() string {
	if f.p == nil || *f.p == "" {
		return string(tlsconfig.ClientAuthNone)
	}
	return string(*f.p)
}
func (f clientAuthFlag) Set(s string) error { *f.p = tlsconfig.ClientAuth(s); return nil }
func (f clientAuthFlag) Type() string       { return "string" }
