// Package deploycheck holds the tests that keep Strata's deployment files
// true to the agent they deploy. It has no code of its own.
//
//   - TestKubernetesManifests reads every YAML document under
//     deploy/kubernetes and checks, without a cluster: the kinds a
//     deployment needs are there (StatefulSet, headless and client
//     Services, PodDisruptionBudget, HorizontalPodAutoscaler, ConfigMap);
//     every agent flag, in the args or in the ConfigMap's --config file, is
//     one `strata agent --help` lists and its value parses and validates as
//     the agent would (agent.Config); container ports, Service ports and
//     probes agree with --kafka-addr, --http-addr and --gossip-addr; no
//     client Service exposes the HTTP port; the NetworkPolicy admits Kafka
//     from clients, gossip and HTTP between agents and HTTP from a
//     monitoring namespace, on the ports the flags name, and no more; each
//     pod advertises its own name under the headless Service; the preStop
//     hook runs a forced `strata agent drain --wait` against the agent's
//     own HTTP port and the grace period outlasts the drain, the upload of
//     sole copies and the shutdown. With kubectl on the PATH it also
//     renders the kustomization.
//   - TestMonitoringMatchesAgent runs two real agent processes, produces,
//     tiers, consumes in a group, makes an upload fail and stops a
//     follower, so that every metric family has samples; then every metric and label that
//     deploy/monitoring/alerts.yaml and grafana-dashboard.json use must be
//     one the agents export, the probe paths of the manifests must answer
//     200, the manifests' preStop command must drain and stop the agent,
//     and each alert must have a section in docs/operations.md.
package deploycheck
