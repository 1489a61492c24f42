package kafka

// Authorization (--authorizer acl, docs/security.md "Authorization"): the
// one place handlers ask whether the connection's principal may do an
// operation on a resource. Each handler's header comment says what it
// checks; the rules are those of Kafka's KafkaApis and AuthHelper:
//
//   - A resource the principal may not touch answers its own code
//     (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
//     CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
//     in its slot of the answer; the rest of the request is served.
//   - A topic is checked by name before it is looked up, so a principal
//     that may not describe a topic cannot learn whether it exists.
//   - Agent-internal traffic (follower fetches, OffsetForLeaderEpoch from a
//     replica) is CLUSTER_ACTION on the CLUSTER. Agents reach each other
//     over the first PLAINTEXT listener as User:ANONYMOUS today, so that
//     principal must be a super user or granted CLUSTER_ACTION (the docs
//     say so) until inter-agent SASL is wired.
//
// Without an authorizer (AuthorizerEnabled false) every check passes.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

// anonymous is Kafka's principal of a connection that did not authenticate.
const anonymous = "User:ANONYMOUS"

// who is the request's principal and host as the authorizer sees them.
func (r *request) who() (principal, host string) {
	principal = anonymous
	if r.conn != nil {
		principal = r.conn.Principal()
	}
	host = r.remote
	if h, _, err := net.SplitHostPort(r.remote); err == nil {
		host = h
	}
	return principal, host
}

// authorized reports whether r's principal may do op on the resource of
// type typ named name; always true without an authorizer.
func (s *Server) authorized(r *request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if !s.authz.AuthorizerEnabled() {
		return true
	}
	principal, host := r.who()
	ok := s.authz.Authorize(principal, host, op, typ, name)
	if !ok {
		s.metrics.denied(typ, op)
		// Kafka's authorizer logs denials at INFO; at DEBUG here, since a
		// client retrying a denied request would otherwise flood the log;
		// strata_kafka_authorization_denials_total counts them.
		s.logger.Debug("authorization denied", "principal", principal, "host", host,
			"operation", op.String(), "resource_type", typ.String(), "resource", name)
	}
	return ok
}

// authorizedTopic checks op on a topic.
func (s *Server) authorizedTopic(r *request, op kmsg.ACLOperation, topic string) bool {
	return s.authorized(r, op, kmsg.ACLResourceTypeTopic, topic)
}

// authorizedGroup checks op on a consumer group.
func (s *Server) authorizedGroup(r *request, op kmsg.ACLOperation, group string) bool {
	return s.authorized(r, op, kmsg.ACLResourceTypeGroup, group)
}

// authorizedCluster checks op on the cluster.
func (s *Server) authorizedCluster(r *request, op kmsg.ACLOperation) bool {
	return s.authorized(r, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedCreateTopic is Kafka's rule for creating a topic, explicitly
// or by Metadata's auto-create: CREATE on the cluster or on the topic.
func (s *Server) authorizedCreateTopic(r *request, topic string) bool {
	return s.authorizedCluster(r, kmsg.ACLOperationCreate) || s.authorizedTopic(r, kmsg.ACLOperationCreate, topic)
}

// authorizedAnyTopic reports whether op is allowed on some topic (Kafka's
// authorizeByResourceType, used by idempotent InitProducerId, KIP-679).
func (s *Server) authorizedAnyTopic(r *request, op kmsg.ACLOperation) bool {
	if !s.authz.AuthorizerEnabled() {
		return true
	}
	principal, host := r.who()
	return s.authz.AuthorizeAny(principal, host, op, kmsg.ACLResourceTypeTopic)
}

// deniedTopic checks op on a topic a request names by name, or by id
// (byID, where t and found are the lookup's result). An id that resolves
// to no topic is not denied but answered unknown, as Kafka does: its name,
// which ACLs are written against, is not known.
func (s *Server) deniedTopic(r *request, op kmsg.ACLOperation, name string, t *Topic, found, byID bool) bool {
	if byID {
		if !found {
			return false
		}
		name = t.Name
	}
	return !s.authorizedTopic(r, op, name)
}

// configDenied checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
// resource: a topic's on the topic, a broker's (and its loggers') on the
// CLUSTER, as Kafka does. It returns the code to answer, 0 when allowed.
func (s *Server) configDenied(r *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !s.authorizedTopic(r, op, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !s.authorizedCluster(r, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}
