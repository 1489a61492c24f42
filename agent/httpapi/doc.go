// Package httpapi is an agent's HTTP server (default :9644): probes,
// metrics, profiles, the status page, the web console, tiering status and
// drains, behind the credentials the port asks for. The agent root builds
// it from its flags (Config) and sees to its life cycle; the agent's
// state reaches it through Host and Deps.
//
//	/metrics            Prometheus exposition of the agent's registry
//	/healthz            200 while the process serves HTTP at all (liveness)
//	/readyz             200 once the Kafka listener serves, 503 before and while stopping
//	/debug/pprof/       Go profiles, with --http-pprof
//	/                   a plain-text status page
//	/console/           the web console (agent/console/assets, embedded)
//	GET /console/topics/{name}, /console/groups/{id}, /console/agents/{id}
//	                    the page of one topic, group or agent (consolepages.go)
//	GET /v1/console     the cluster-wide view the console polls, as JSON (console.go):
//	                    ?q=S&internal=true|false&topics_limit=N&topics_offset=N
//	                    &groups_limit=N&groups_offset=N (100 topics and groups by default)
//	GET /v1/console/topics/{name}  one topic, its partitions and the groups reading it
//	GET /v1/console/groups/{id}    one group, its members and lag
//	GET /v1/console/agents/{id}    one agent, its load and the replicas it holds
//	GET /v1/console/agent  this agent's own report, which the others fetch; its cost
//	                    model's counters over the last minute come from snapshots
//	                    the history sampler takes (costwindow.go)
//	GET /v1/console/history        the charts' hour of every agent, merged (history.go)
//	GET /v1/console/history/agent  this agent's history ring, which the others fetch
//	GET /v1/console/records        one page of a topic's records, the message
//	                               browser's (records.go, recordsread.go): ?topic=T&partition=P|all
//	                               &from=start|end|offset:N|before:N|timestamp:MS&limit=K
//	                               &isolation=read_uncommitted|read_committed&key=S
//	                               &decode=auto|json|text|hex&max_value_bytes=N
//	GET /v1/console/session        who the console acts as, its CSRF token, what it may do;
//	                               POST signs a Kafka user in, DELETE signs out (consoleadmin.go)
//	POST /v1/console/actions/<a>   an admin action as that principal, through the Kafka API
//	GET /v1/console/admin/<r>      the reads the admin forms need, as that principal
//	GET /v1/tiering     every tiered partition's bytes, offsets and upload lag
//	/v1/drain           GET a drain's progress, POST start one (drain.go)
//
// # Who may call
//
// The HTTP port drains agents and serves profiles of the process, so once
// it has a way to tell who is asking, every request that changes state
// (any method but GET and HEAD) and every /debug/pprof request needs
// credentials, and so do the read-only path groups named in
// --http-require-auth-for (paths.go). Two credentials are taken:
//
//   - a bearer token of --http-token-file ("Authorization: Bearer <t>");
//   - with --http-tls, --http-tls-client-auth requested|required and
//     --authorizer acl, a client certificate verified by
//     --tls-client-ca-file, whose subject --ssl-principal-mapping-rules
//     maps to a principal, as on an SSL Kafka listener (principal.go).
//     That principal is asked of the ACLs as a Kafka admin request would
//     be: ALTER on the CLUSTER for a change or a profile, DESCRIBE on the
//     CLUSTER for a restricted read (ALTER implies DESCRIBE; super users
//     may do both); and as a Fetch would be for the message browser's
//     records: READ on the topic.
//
// Records are more than counters: they are their own path group,
// "records", which --http-require-auth-for can name, and which an agent
// with --authorizer acl always restricts (its ACLs guard Fetch, and the
// console's Kafka client reads as the inter-agent principal). Such an
// agent whose port takes no credentials serves no records at all (401).
//
// A request is let through when either credential allows it. Otherwise the
// answer follows HTTP's convention: 401 when the request carries no usable
// credential (none, a wrong token, a certificate no rule maps), 403 when
// it carries a certificate whose principal may not do this. Without an
// authorizer a certificate allows nothing, as it could only be compared to
// a list the agent does not have: the token is then the only credential.
//
// With neither a token file nor principal authorization, nothing is asked,
// as Kafka allows everything without an authorizer; the agent says so at
// start. But an agent with --authorizer acl is secure by default: while
// its port takes no credentials it refuses every request that changes
// state with 401 and a message naming --http-token-file, since its ACLs
// would otherwise be walked around through HTTP (a drain stops a broker
// Kafka would let only a CLUSTER ALTER stop), unless the operator says
// otherwise with --http-allow-unauthenticated-changes. Reads, and
// profiles with --http-pprof, are served as without ACLs. Prometheus scrapers and kubelet probes carry no credentials, so
// /metrics, /healthz, /readyz and the read-only pages stay open unless
// --http-require-auth-for names them. A request that changes state must
// also be one no web page elsewhere could have made a browser send
// (sameOriginJSON in drain.go).
//
// # The console's admin actions
//
// The console's session, action and admin-read paths ask for credentials
// themselves, since a signed-in session is one the guard does not know
// (consoleadmin.go). Each action is a Kafka admin request
// (agent/console/admin) sent on a franz-go client to this agent's own
// Kafka listener, so Kafka's handlers and authorizer decide, as for any
// client. The client is, in this order: with a bearer token, the agent's
// own (the inter-agent listener's credentials); with the cookie of a
// session, the Kafka user who signed in with SASL (PLAIN or SCRAM) on the
// agent's first SASL listener, whose ACLs are then exactly the Kafka
// ones; with a certificate principal allowed ALTER on the CLUSTER, or on
// a port that asks no credentials, the agent's own; else the request is
// refused as a drain would be (401, 403, or the secure-by-default 401).
// A certificate principal is thus an operator or nothing: its ACLs are
// not asked action by action (sign in with a Kafka user for that).
//
// Sessions (consolesession.go): a random 256-bit id in the cookie
// strata_console (HttpOnly, SameSite=Strict, Path=/, Secure on an HTTPS
// port), at most 64 per agent (a new one evicts the least recently used),
// ended after 30 minutes unused, by DELETE /v1/console/session, or when
// the server stops; each holds its user's Kafka client, and the password
// inside it, in this process only. Every change a cookie, a certificate
// or an open port authorizes must carry X-Strata-CSRF, an HMAC of the
// cookie under a key drawn at start, which GET /v1/console/session
// answers; a bearer token is not sent by browsers on their own and needs
// none. What the page offers a session (its "can") comes from the
// agent's authorizer in-process, Authorize and AuthorizeAny on the
// operation each action's Kafka request needs, since Strata's Metadata
// and DescribeCluster report every operation as authorized; it only
// hides forms, and a refused action answers with the broker's code.
//
// # Calls to other agents
//
// The agents of a cluster call each other's ports: a drain forwarded with
// ?agent= and the console's fetch of each agent's report and history
// ring. They go only to
// the address the store registered for the agent (peer.go), in this
// agent's scheme (tls.go), carry this agent's first token, and present its
// certificate when the port asks for one, so their principal needs CLUSTER
// ALTER (make it a super user, as for the inter-agent listener).
//
// # Life cycle and concurrency
//
// The agent calls, from one goroutine and in this order: New (reads the
// token file), Listen (binds the port, with TLS), SetDeps (once the
// agent's store, tiering, controller and gossip exist), then Serve and
// WatchTokens each in a goroutine of its own, and at last Shutdown, which
// ends Serve; WatchTokens ends when its stop channel closes. Serve owns
// two goroutines: the one that samples the console's history ring every
// 5 s and the one that ends idle console sessions every minute; it starts
// them, and stops them and waits for them before returning, every
// session's Kafka client closed. Close closes the listener of a server
// that never served (an agent whose start failed). Handlers run
// concurrently, one goroutine per request; what they share (the tokens,
// the console's last view, the history ring, the sessions) is guarded
// where it is kept.
package httpapi
