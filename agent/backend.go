package agent

import (
	"context"
	"strconv"

	"github.com/strata-streaming/strata/agent/control"
	"github.com/strata-streaming/strata/agent/coord"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/listener"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/topics"
)

// backends are the families the Kafka server is built from: the topic
// table (agent/topics) for topics, the coordinators (agent/coord) for
// groups, transactions and producer ids, the agent for the cluster and
// reassignments, the security state for users, ACLs and quotas
// (security.go), and the controller for followers' connections
// (agent/control/deaths.go).
func (a *Agent) backends() kafka.Backends {
	return kafka.Backends{Cluster: a, Topics: a.topics, TopicAdmin: a.topics, ProducerIDs: a.coords, Groups: a.coords, Transactions: a.coords, Diskless: a.coords,
		Reassignments: a, Users: a.users, Authorizer: a.acls, Quotas: a.quotas, Followers: a.ctl}
}

var (
	_ kafka.TopicReader  = (*topics.Table)(nil)
	_ kafka.TopicAdmin   = (*topics.Table)(nil)
	_ kafka.ProducerIDs  = (*coord.Coordinators)(nil)
	_ kafka.Groups       = (*coord.Coordinators)(nil)
	_ kafka.Transactions = (*coord.Coordinators)(nil)
	_ kafka.ReplicaLinks = (*control.Controller)(nil)
)

func (a *Agent) ClusterID() string { return a.clusterID }
func (a *Agent) AgentID() int32    { return a.id }
func (a *Agent) DataDir() string   { return a.logDir() }

// AgentConfigs lists the agent's settings under Kafka's broker config names
// where Kafka has one, for DescribeConfigs of the BROKER resource.
func (a *Agent) AgentConfigs() []metadata.ConfigEntry {
	static := func(name, value string, typ metadata.ConfigType, doc string) metadata.ConfigEntry {
		return metadata.ConfigEntry{Name: name, Value: value, Source: metadata.SourceDefaultAgent, Type: typ, Doc: doc}
	}
	out := []metadata.ConfigEntry{
		static("broker.id", strconv.Itoa(int(a.id)), metadata.TypeInt, "This agent's id."),
		static("log.dirs", a.logDir(), metadata.TypeString, "Directory of the partition logs."),
		static("advertised.listeners", listener.Advertised(a.listeners), metadata.TypeString, "Addresses clients connect to, per listener."),
		static("auto.create.topics.enable", strconv.FormatBool(a.cfg.AutoCreateTopics), metadata.TypeBoolean, "Create unknown topics on a metadata request."),
		static("num.partitions", strconv.Itoa(int(a.cfg.NumPartitions)), metadata.TypeInt, "Partitions of topics created without a count."),
		static("default.replication.factor", strconv.Itoa(int(a.cfg.DefaultReplicationFactor)), metadata.TypeShort, "Replication factor of topics created without one."),
		static("socket.request.max.bytes", strconv.Itoa(int(a.cfg.Kafka.MaxRequestBytes)), metadata.TypeInt, "Largest request frame accepted."),
		static("log.flush", a.cfg.LogFlush, metadata.TypeString, "When appends are fsynced: always, interval or never (Strata setting)."),
	}
	if a.cfg.Rack != "" {
		out = append(out, static("broker.rack", a.cfg.Rack, metadata.TypeString, "Rack of this agent."))
	}
	for _, f := range topicDefaultFlags {
		d, _ := metadata.LookupTopicConfig(f.config)
		e := metadata.ConfigEntry{Name: f.kafkaName, Value: d.Default, Source: metadata.SourceDefault, Type: d.Type, Doc: d.Doc}
		if v, ok := a.cfg.TopicDefaults[f.config]; ok {
			e.Value, e.Source = v, metadata.SourceDefaultAgent
		}
		out = append(out, e)
	}
	return out
}

// AlterPartitionReassignment implements kafka.Reassignments: replicas nil
// cancels. Target agents must be live. An operator's target also sets the
// partition's replication factor, as in Kafka.
func (a *Agent) AlterPartitionReassignment(ctx context.Context, topic string, index int32, replicas []int32) error {
	return a.ctl.Reassign(ctx, topic, index, replicas, true)
}

// PartitionReassignments implements kafka.Reassignments: every partition being
// moved, or those of only (topic -> partitions; nil: all).
func (a *Agent) PartitionReassignments(only map[string][]int32) []kafka.Reassignment {
	return a.ctl.PartitionReassignments(only)
}

// ElectPreferredLeader implements kafka.Reassignments: the partition's first
// replica leads, if it is in sync and alive, in a new epoch.
func (a *Agent) ElectPreferredLeader(ctx context.Context, topic string, index int32) error {
	return a.ctl.ElectPreferredLeader(ctx, topic, index)
}
