package kafka

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// TOPIC resources take SET, DELETE, APPEND and SUBTRACT. APPEND and SUBTRACT
// apply only to list-typed configs (cleanup.policy is the one Strata has);
// on any other config, or on a config Strata does not know, they are
// INVALID_CONFIG, as in Kafka. Like Kafka, APPEND and SUBTRACT start from
// the effective value (the topic's own, else the agent default, else the
// built-in default), APPEND skips items already present, and the result is
// validated as a whole, so SUBTRACT of the last cleanup.policy item fails.
// All operations on one topic are applied in one compare-and-swap: either
// all of them take effect or none does. diskless.enable (Strata's, named
// after KIP-1150) is fixed at creation: a SET to another value, or a
// DELETE on a diskless topic, is INVALID_CONFIG.
//
// A config named twice in one resource, a resource named twice in one
// request, an unknown operation and a null value for SET, APPEND or
// SUBTRACT are INVALID_REQUEST, as in Kafka. BROKER resources are
// INVALID_REQUEST because agent settings are static (flags, environment,
// YAML file); other resource types likewise.
//
// Authorization (authorize.go): ALTER_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED) or, for BROKER, on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

func handleIncrementalAlterConfigs(ctx context.Context, s *Server, r *request, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	seen := map[resourceKey]int{}
	for _, rr := range req.Resources {
		seen[resourceKey{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		denied := s.configDenied(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case seen[resourceKey{rr.ResourceType, rr.ResourceName}] > 1:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = strptr("resource " + rr.ResourceName + " appears more than once in the request")
		case denied != 0:
			res.ErrorCode = denied
		case rr.ResourceType != kmsg.ConfigResourceTypeTopic:
			res.ErrorCode, res.ErrorMessage = notAlterable(rr.ResourceType)
		default:
			res.ErrorCode, res.ErrorMessage = s.incrementalAlterTopic(ctx, rr, req.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (s *Server) incrementalAlterTopic(ctx context.Context, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, *string) {
	if err := checkIncrementalOps(rr.Configs); err != nil {
		return errorCode(err), errorMessage(err)
	}
	defaults := s.topics.TopicConfigDefaults()
	return s.alterTopicConfigs(ctx, rr.ResourceName, func(current map[string]string) (map[string]string, error) {
		return applyIncremental(current, defaults, rr.Configs)
	}, validateOnly)
}

// checkIncrementalOps rejects what is wrong regardless of the topic's
// current configs, before the backend is asked to do anything.
func checkIncrementalOps(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	names := make(map[string]bool, len(ops))
	for _, op := range ops {
		if names[op.Name] {
			return reqErrorf(kerr.InvalidRequest, "config %s appears more than once", op.Name)
		}
		names[op.Name] = true
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpDelete:
			continue
		case kmsg.IncrementalAlterConfigOpSet:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			d, ok := metadata.LookupTopicConfig(op.Name)
			if !ok {
				return reqErrorf(kerr.InvalidConfig, "unknown topic config %q", op.Name)
			}
			if d.Type != metadata.TypeList {
				return reqErrorf(kerr.InvalidConfig, "%s is not a list config; APPEND and SUBTRACT apply only to lists", op.Name)
			}
		default:
			return reqErrorf(kerr.InvalidRequest, "unknown operation %d for config %s", op.Op, op.Name)
		}
		if op.Value == nil {
			return reqErrorf(kerr.InvalidRequest, "null value for config %s", op.Name)
		}
	}
	return nil
}

// applyIncremental returns the topic's new dynamic configs: current with ops
// applied in order. current is not modified. The ops must have passed
// checkIncrementalOps; the backend validates the result.
func applyIncremental(current map[string]string, defaults metadata.Defaults, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := make(map[string]string, len(current)+len(ops))
	for k, v := range current {
		next[k] = v
	}
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			items := splitList(effectiveValue(op.Name, next, defaults))
			for _, v := range splitList(*op.Value) {
				has := slices.Contains(items, v)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
					items = append(items, v)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
					items = slices.DeleteFunc(items, func(x string) bool { return x == v })
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, reqErrorf(kerr.InvalidRequest, "unknown operation %d for config %s", op.Op, op.Name)
		}
	}
	return next, nil
}

// effectiveValue is name's value as a topic with configs would see it.
func effectiveValue(name string, configs map[string]string, defaults metadata.Defaults) string {
	if v, ok := configs[name]; ok {
		return v
	}
	if v, ok := defaults[name]; ok {
		return v
	}
	d, _ := metadata.LookupTopicConfig(name)
	return d.Default
}

// splitList parses a Kafka list value: comma-separated, items trimmed,
// empty items dropped.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
