// Package deploycheck holds the tests that keep Strata's deployment files
// true to the agent they deploy. It has no code of its own.
//
//   - TestKubernetesManifests reads every YAML document under
//     deploy/kubernetes and checks, without a cluster: the kinds a
//     deployment needs are there (StatefulSet, headless and client
//     Services, PodDisruptionBudget, HorizontalPodAutoscaler, ConfigMap);
//     every agent flag, in the args or in the ConfigMap's --config file, is
//     one `strata agent --help` lists and its value parses and validates as
//     the agent would (agent.Config; files of Secrets and variables from
//     Secrets replaced by samples); container ports, Service ports and
//     probes agree with every Kafka listener (--listeners, or
//     --kafka-addr), --http-addr and --gossip-addr; no client Service
//     exposes the HTTP port or the inter-agent listener; the NetworkPolicy
//     admits the client listeners from clients, the inter-agent listener,
//     gossip and HTTP between agents and HTTP from a monitoring
//     namespace, on the ports the flags name, and no more; each pod
//     advertises its own name under the headless Service on every
//     listener; every Secret the pod reads is one docs/security.md tells
//     the operator to make, with each key; security is on (TLS listeners,
//     SASL for clients and agents, the agents' user bootstrapped and a
//     super user, a gossip key, HTTPS with tokens, probes in HTTPS and
//     open); the preStop hook runs a forced `strata agent drain --wait`
//     against the agent's own HTTP port with the credentials it asks for;
//     a real agent started with the manifests' settings (its own
//     addresses and bucket) lets a client log in on each client listener
//     as the agents' SASL user, and the hook drains and stops it; and the
//     grace period outlasts the drain, the upload of sole copies
//     and the shutdown; the autoscaler scales the StatefulSet within at
//     least four agents, on resources the container requests and on
//     agent metrics the agents' flags make them export
//     (--network-capacity for strata_agent_utilization_ratio). With
//     kubectl on the PATH it also renders the kustomization.
//   - TestMonitoringMatchesAgent runs two real agent processes, produces,
//     tiers, consumes in a group, makes an upload fail and stops a
//     follower, so that every metric family has samples; then every metric and label that
//     deploy/monitoring/alerts.yaml and grafana-dashboard.json use must be
//     one the agents export (with the labels prometheus.yml adds), the
//     probe paths of the manifests must answer 200, and each alert must
//     have a section in docs/operations.md. Every pods metric the
//     HorizontalPodAutoscaler scales on must be served by a rule of
//     deploy/monitoring/prometheus-adapter.yaml whose seriesQuery names a
//     metric the agents export, whose resource overrides are labels its
//     series carry, and whose metricsQuery reads only what exists.
package deploycheck
