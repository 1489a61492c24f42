// Package admin is the console's admin actions and the reads their forms
// need (issue 32, item 3). Each action is one or a few Kafka admin
// requests sent with a kadm client that the caller connects to the
// agent's own Kafka listener as a principal (agent/httpapi decides which),
// so the Kafka handlers' validation and the authorizer decide, exactly as
// for `strata topic create` or kafka-acls.sh. Nothing here checks an ACL
// or a topic rule of its own: a request is checked only for the shape of
// its JSON, and everything else is the broker's answer.
//
//	action               Kafka request                             what Kafka's authorizer asks
//	create-topic         CreateTopics                              CREATE on the CLUSTER or the TOPIC
//	alter-topic-configs  IncrementalAlterConfigs                   ALTER_CONFIGS on the TOPIC
//	delete-records       DeleteRecords (Metadata for "every partition")  DELETE on the TOPIC
//	reset-offsets        DescribeGroups, OffsetFetch, ListOffsets,  DESCRIBE/READ on the GROUP, READ on the TOPIC
//	                     OffsetCommit (internal/groupreset)
//	create-acls          CreateAcls                                ALTER on the CLUSTER
//	delete-acls          DeleteAcls                                ALTER on the CLUSTER
//	upsert-scram-user    AlterUserScramCredentials                 ALTER on the CLUSTER
//	delete-scram-user    AlterUserScramCredentials                 ALTER on the CLUSTER
//
// A refusal comes back as *Error: the Kafka error's name as Code, the
// broker's ErrorMessage where the response has one, and the HTTP status
// that fits (StatusOf). The functions are safe for concurrent use; each
// call uses only its arguments.
package admin

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/internal/groupreset"
)

// Error is a refused or failed action as the console shows it.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int `json:"-"`
	// Text says what failed, for a person.
	Text string `json:"error"`
	// Code is the Kafka error's name (TOPIC_AUTHORIZATION_FAILED), empty
	// when the failure is not a Kafka error code.
	Code string `json:"code,omitempty"`
	// Message is the broker's ErrorMessage, when its response has one.
	Message string `json:"message,omitempty"`
}

func (e *Error) Error() string {
	s := e.Text
	if e.Message != "" && !strings.Contains(s, e.Message) {
		s += " (broker: " + e.Message + ")"
	}
	return s
}

// Invalid is a request whose JSON the action cannot use (400).
func Invalid(text string) *Error { return &Error{Status: http.StatusBadRequest, Text: text} }

// Refusal turns err, from kadm or a Kafka response, into an *Error: what
// is what was attempted ("create topic orders"), brokerMessage the
// response's ErrorMessage ("" where it has none).
func Refusal(what string, err error, brokerMessage string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Status: http.StatusBadGateway, Text: what + ": " + err.Error(), Message: strings.TrimSpace(brokerMessage)}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		out.Code, out.Status = ke.Message, StatusOf(ke)
	case errors.Is(err, groupreset.ErrGroupActive):
		out.Status = http.StatusConflict
	case errors.Is(err, groupreset.ErrTarget), errors.Is(err, groupreset.ErrScope),
		errors.Is(err, groupreset.ErrTopic), errors.Is(err, groupreset.ErrNoCommits):
		out.Status = http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		out.Status = http.StatusGatewayTimeout
	}
	return out
}

// StatusOf is the HTTP status that fits a Kafka error: 403 for the
// authorizer's refusals, 401 for a failed SASL login, 409 for a conflict
// with what exists, 404 for what does not, 400 for a request the broker
// found invalid, 503 for a retriable state of the cluster, else 502.
func StatusOf(ke *kerr.Error) int {
	name := ke.Message
	switch {
	case strings.HasSuffix(name, "_AUTHORIZATION_FAILED"):
		return http.StatusForbidden
	case strings.HasPrefix(name, "SASL_") || ke == kerr.IllegalSaslState || ke == kerr.UnsupportedSaslMechanism:
		return http.StatusUnauthorized
	}
	switch ke {
	case kerr.TopicAlreadyExists, kerr.NonEmptyGroup, kerr.GroupSubscribedToTopic, kerr.DuplicateResource,
		kerr.ConcurrentTransactions, kerr.RebalanceInProgress, kerr.UnstableOffsetCommit:
		return http.StatusConflict
	case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.GroupIDNotFound, kerr.ResourceNotFound:
		return http.StatusNotFound
	case kerr.PolicyViolation, kerr.SecurityDisabled, kerr.OffsetOutOfRange, kerr.UnacceptableCredential,
		kerr.UnsupportedVersion, kerr.UnsupportedForMessageFormat:
		return http.StatusBadRequest
	}
	if strings.HasPrefix(name, "INVALID_") {
		return http.StatusBadRequest
	}
	if ke.Retriable {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}
