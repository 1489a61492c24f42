package kafka

// DescribeConfigs (key 32), versions 1-4.
//
// TOPIC resources list every topic config Strata acts on (the table in
// agent/metadata), not Kafka's full set of ~40: a key Strata ignores is
// absent rather than shown with a value that means nothing here. Every topic
// config is alterable, so ReadOnly is false, except diskless.enable
// (Strata's, named after KIP-1150), which is given at creation and never
// changes; none is sensitive.
//
// BROKER resources describe the agent's own settings. The empty name and
// this agent's id both answer with all of them (Kafka answers the empty
// name with only the dynamic cluster-wide defaults, of which Strata has
// none); another agent's id is INVALID_REQUEST, as in Kafka, because each
// agent describes only itself. Agent settings are static, so every BROKER
// entry is ReadOnly.
//
// Synonyms follow Kafka's order of preference (the topic's own value, then
// the agent-level default, then the built-in default) and use Kafka's broker
// config names for the agent-level ones (log.retention.ms for retention.ms),
// so kafka-configs.sh shows familiar names.
//
// BROKER_LOGGER, CLIENT_METRICS, GROUP and unknown resource types get
// INVALID_REQUEST per resource. Version 0 is not served (Kafka 4 removed it).
//
// Authorization (authorize.go): DESCRIBE_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED) or, for BROKER, on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

// agentSynonyms maps a topic config to the Kafka broker setting that
// supplies its default, for the synonym list. A name missing here is its
// own broker synonym (compression.type, min.insync.replicas).
var agentSynonyms = map[string]string{
	metadata.CleanupPolicy:               "log.cleanup.policy",
	metadata.DeleteRetentionMs:           "log.cleaner.delete.retention.ms",
	metadata.MaxCompactionLagMs:          "log.cleaner.max.compaction.lag.ms",
	metadata.MinCleanableDirtyRatio:      "log.cleaner.min.cleanable.ratio",
	metadata.MinCompactionLagMs:          "log.cleaner.min.compaction.lag.ms",
	metadata.IndexIntervalBytes:          "log.index.interval.bytes",
	metadata.LocalRetentionBytes:         "log.local.retention.bytes",
	metadata.LocalRetentionMs:            "log.local.retention.ms",
	metadata.MaxMessageBytes:             "message.max.bytes",
	metadata.MessageTimestampAfterMaxMs:  "log.message.timestamp.after.max.ms",
	metadata.MessageTimestampBeforeMaxMs: "log.message.timestamp.before.max.ms",
	metadata.MessageTimestampType:        "log.message.timestamp.type",
	metadata.RetentionBytes:              "log.retention.bytes",
	metadata.RetentionMs:                 "log.retention.ms",
	metadata.SegmentBytes:                "log.segment.bytes",
	metadata.SegmentMs:                   "log.roll.ms",
}

func agentSynonym(topicConfig string) string {
	if n, ok := agentSynonyms[topicConfig]; ok {
		return n
	}
	return topicConfig
}

func handleDescribeConfigs(ctx context.Context, s *Server, r *request, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if code := s.configDenied(r, kmsg.ACLOperationDescribeConfigs, rr.ResourceType, rr.ResourceName); code != 0 {
			res.ErrorCode = code
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			s.describeTopicConfigs(req, rr, &res)
		case kmsg.ConfigResourceTypeBroker:
			s.describeAgentConfigs(req, rr, &res)
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = strptr("resource type " + strconv.Itoa(int(rr.ResourceType)) + " is not supported; only TOPIC (2) and BROKER (4) are")
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// wanted reports whether name passes the request's ConfigNames filter; an
// absent or empty list asks for everything.
func wanted(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func (s *Server) describeTopicConfigs(req *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	if err := metadata.ValidateTopicName(rr.ResourceName); err != nil {
		res.ErrorCode = kerr.InvalidTopicException.Code
		res.ErrorMessage = errorMessage(err)
		return
	}
	t, ok := s.topics.Topic(rr.ResourceName)
	if !ok {
		res.ErrorCode = kerr.UnknownTopicOrPartition.Code
		res.ErrorMessage = strptr("topic " + rr.ResourceName + " does not exist")
		return
	}
	defaults := s.topics.TopicConfigDefaults()
	for _, e := range metadata.Describe(t.Configs, defaults) {
		if !wanted(rr.ConfigNames, e.Name) {
			continue
		}
		c := configEntry(req, e, e.ReadOnly)
		if req.IncludeSynonyms {
			c.ConfigSynonyms = topicSynonyms(e.Name, t.Configs, defaults)
		}
		res.Configs = append(res.Configs, c)
	}
}

// topicSynonyms lists every level that has a value for name, most
// preferred first; the first is the effective value.
func topicSynonyms(name string, topicConfigs map[string]string, defaults metadata.Defaults) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(n, v string, src kmsg.ConfigSource) {
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name, syn.Value, syn.Source = n, strptr(v), src
		out = append(out, syn)
	}
	if v, ok := topicConfigs[name]; ok {
		add(name, v, kmsg.ConfigSourceDynamicTopicConfig)
	}
	if v, ok := defaults[name]; ok {
		add(agentSynonym(name), v, kmsg.ConfigSourceStaticBrokerConfig)
	}
	if d, ok := metadata.LookupTopicConfig(name); ok {
		add(agentSynonym(name), d.Default, kmsg.ConfigSourceDefaultConfig)
	}
	return out
}

func (s *Server) describeAgentConfigs(req *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	if !s.agentResource(rr.ResourceName) {
		res.ErrorCode = kerr.InvalidRequest.Code
		res.ErrorMessage = strptr("broker resource " + strconv.Quote(rr.ResourceName) + " is not this agent (" + strconv.Itoa(int(s.cluster.AgentID())) + "); ask that agent, or use the empty name")
		return
	}
	for _, e := range s.cluster.AgentConfigs() {
		if !wanted(rr.ConfigNames, e.Name) {
			continue
		}
		c := configEntry(req, e, true)
		if req.IncludeSynonyms {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = e.Name, strptr(e.Value), kmsg.ConfigSource(e.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		res.Configs = append(res.Configs, c)
	}
}

// configEntry converts one described config. metadata's source and type
// codes are Kafka's, so they pass through unchanged.
func configEntry(req *kmsg.DescribeConfigsRequest, e metadata.ConfigEntry, readOnly bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = e.Name
	c.Value = strptr(e.Value)
	c.ReadOnly = readOnly
	c.Source = kmsg.ConfigSource(e.Source)
	c.IsDefault = e.Source == metadata.SourceDefault
	c.IsSensitive = false
	c.ConfigType = kmsg.ConfigType(e.Type)
	if req.IncludeDocumentation && e.Doc != "" {
		c.Documentation = strptr(e.Doc)
	}
	return c
}
