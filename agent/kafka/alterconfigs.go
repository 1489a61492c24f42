package kafka

// AlterConfigs (key 33), versions 0-2.
//
// The legacy, whole-replacement form: the configs named for a TOPIC become
// the topic's complete set of dynamic configs, and any key not named returns
// to its default. The replacement is one compare-and-swap on the topic's
// metadata, so it is atomic per topic; configs are validated against
// Strata's table (agent/metadata) and a key Strata does not act on is
// INVALID_CONFIG, where Kafka would accept and store it. diskless.enable
// (Strata's, named after KIP-1150) is fixed at creation: a replacement
// that sets it to another value, or leaves it out of a diskless topic's
// set, is INVALID_CONFIG, as is one that gives a diskless topic a config
// it cannot have (agent/topics, Table.AlterTopicConfigs).
//
// BROKER resources are refused with INVALID_REQUEST: agent settings are
// static (flags, environment, YAML file), and there are no dynamic broker
// configs. BROKER_LOGGER and other types are INVALID_REQUEST as well. A
// resource named twice in one request, or a config named twice in one
// resource, is INVALID_REQUEST, as in Kafka; a null value is INVALID_CONFIG.
//
// Authorization (authorize.go): ALTER_CONFIGS on the topic
// (TOPIC_AUTHORIZATION_FAILED) or, for BROKER, on the CLUSTER
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

func handleAlterConfigs(ctx context.Context, s *Server, r *request, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	seen := map[resourceKey]int{}
	for _, rr := range req.Resources {
		seen[resourceKey{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if seen[resourceKey{rr.ResourceType, rr.ResourceName}] > 1 {
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = strptr("resource " + rr.ResourceName + " appears more than once in the request")
		} else if code := s.configDenied(r, kmsg.ACLOperationAlterConfigs, rr.ResourceType, rr.ResourceName); code != 0 {
			res.ErrorCode = code
		} else {
			res.ErrorCode, res.ErrorMessage = s.alterConfigsResource(ctx, rr, req.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (s *Server) alterConfigsResource(ctx context.Context, rr kmsg.AlterConfigsRequestResource, validateOnly bool) (int16, *string) {
	if rr.ResourceType != kmsg.ConfigResourceTypeTopic {
		return notAlterable(rr.ResourceType)
	}
	replacement := make(map[string]string, len(rr.Configs))
	for _, c := range rr.Configs {
		if _, dup := replacement[c.Name]; dup {
			return kerr.InvalidRequest.Code, strptr("config " + c.Name + " appears more than once")
		}
		if c.Value == nil {
			return kerr.InvalidConfig.Code, strptr("null value not supported for topic config " + c.Name)
		}
		replacement[c.Name] = *c.Value
	}
	return s.alterTopicConfigs(ctx, rr.ResourceName, func(map[string]string) (map[string]string, error) {
		return replacement, nil
	}, validateOnly)
}

// notAlterable answers an alter of any non-TOPIC resource.
func notAlterable(typ kmsg.ConfigResourceType) (int16, *string) {
	if typ == kmsg.ConfigResourceTypeBroker {
		return kerr.InvalidRequest.Code, strptr(staticAgentConfigs)
	}
	return kerr.InvalidRequest.Code, strptr("resource type " + strconv.Itoa(int(typ)) + " cannot be altered; only TOPIC (2) configs are dynamic")
}

// alterTopicConfigs is the common tail of both alter APIs: check the topic
// exists, then let the backend apply fn under its compare-and-swap.
func (s *Server) alterTopicConfigs(ctx context.Context, name string, fn func(map[string]string) (map[string]string, error), validateOnly bool) (int16, *string) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return kerr.InvalidTopicException.Code, errorMessage(err)
	}
	if _, ok := s.topics.Topic(name); !ok {
		return kerr.UnknownTopicOrPartition.Code, strptr("topic " + name + " does not exist")
	}
	if err := s.topicAdmin.AlterTopicConfigs(ctx, name, fn, validateOnly); err != nil {
		return errorCode(err), errorMessage(err)
	}
	return 0, nil
}
