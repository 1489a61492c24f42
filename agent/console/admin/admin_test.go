package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/groupreset"
)

// TestRefusal: a Kafka error keeps its name as the code, the broker's
// message, and gets the status that fits; errors of the reset rules and
// time-outs get theirs.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err        error
		msg        string
		status     int
		code, text string
	}{
		{kerr.TopicAuthorizationFailed, "", http.StatusForbidden, "TOPIC_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED"},
		{fmt.Errorf("wrapped: %w", kerr.ClusterAuthorizationFailed), "", http.StatusForbidden, "CLUSTER_AUTHORIZATION_FAILED", "wrapped"},
		{&groupreset.StepError{Op: "describe group", Resource: "g", Err: kerr.GroupAuthorizationFailed}, "", http.StatusForbidden, "GROUP_AUTHORIZATION_FAILED", "describe group g"},
		{kerr.TopicAlreadyExists, "Topic 'orders' already exists.", http.StatusConflict, "TOPIC_ALREADY_EXISTS", ""},
		{kerr.InvalidReplicationFactor, "replication factor 9 is more than the 1 agents", http.StatusBadRequest, "INVALID_REPLICATION_FACTOR", ""},
		{kerr.PolicyViolation, "", http.StatusBadRequest, "POLICY_VIOLATION", ""},
		{kerr.UnknownTopicOrPartition, "", http.StatusNotFound, "UNKNOWN_TOPIC_OR_PARTITION", ""},
		{kerr.SaslAuthenticationFailed, "", http.StatusUnauthorized, "SASL_AUTHENTICATION_FAILED", ""},
		{kerr.NotLeaderForPartition, "", http.StatusServiceUnavailable, "NOT_LEADER_FOR_PARTITION", ""},
		{kerr.UnknownServerError, "", http.StatusBadGateway, "UNKNOWN_SERVER_ERROR", ""},
		{fmt.Errorf("%w (group g is Stable with 1 members)", groupreset.ErrGroupActive), "", http.StatusConflict, "", "members"},
		{groupreset.ErrTarget, "", http.StatusBadRequest, "", ""},
		{context.DeadlineExceeded, "", http.StatusGatewayTimeout, "", ""},
		{errors.New("dial tcp: connection refused"), "", http.StatusBadGateway, "", "connection refused"},
	} {
		e := Refusal("do it", tc.err, tc.msg)
		if e.Status != tc.status || e.Code != tc.code || e.Message != tc.msg || !strings.Contains(e.Text, tc.text) || !strings.HasPrefix(e.Text, "do it: ") {
			t.Errorf("Refusal(%v, %q) = %+v, want status %d code %q", tc.err, tc.msg, e, tc.status, tc.code)
		}
	}
	inner := Invalid("bad")
	if e := Refusal("outer", fmt.Errorf("x: %w", inner), ""); e != inner {
		t.Errorf("an *Error inside was not kept: %+v", e)
	}
}

// TestValidate: each action refuses a body it cannot send, with 400, and
// fills the defaults it documents.
func TestValidate(t *testing.T) {
	bad := []Action{
		&CreateTopic{},
		&AlterTopicConfigs{Topic: "t"},
		&AlterTopicConfigs{Topic: "t", Set: map[string]string{"a": "1"}, Delete: []string{"a"}},
		&DeleteRecords{Topic: "t", Partition: -2},
		&DeleteRecords{Topic: "t", Offset: -5},
		&ResetOffsets{Group: "g", To: "earliest"},                                  // no scope
		&ResetOffsets{Group: "g", To: "soon", AllTopics: true},                     // no such target
		&ResetOffsets{Group: "g", To: "offset", Value: "x", AllTopics: true},       // not a number
		&ResetOffsets{Group: "g", To: "datetime", Value: "today", AllTopics: true}, // not RFC 3339
		&ResetOffsets{Group: "g", To: "earliest", Topics: []string{"t:x"}},
		&CreateACL{ACL{Principal: "alice", Permission: "allow", Operation: "read", ResourceType: "topic", ResourceName: "t"}},
		&CreateACL{ACL{Principal: "User:alice", Permission: "allow", Operation: "fly", ResourceType: "topic", ResourceName: "t"}},
		&CreateACL{ACL{Principal: "User:alice", Permission: "allow", Operation: "any", ResourceType: "topic", ResourceName: "t"}},
		&CreateACL{ACL{Principal: "User:alice", Permission: "maybe", Operation: "read", ResourceType: "topic", ResourceName: "t"}},
		&CreateACL{ACL{Principal: "User:alice", Permission: "allow", Operation: "read", ResourceType: "broker", ResourceName: "t"}},
		&CreateACL{ACL{Principal: "User:alice", Permission: "allow", Operation: "read", ResourceType: "topic"}},
		&DeleteACL{ACL{Principal: "User:alice", Permission: "allow", Operation: "read", ResourceType: "topic", ResourceName: "t", PatternType: "match"}},
		&UpsertSCRAMUser{User: "u"},
		&UpsertSCRAMUser{User: "u", Password: "p", Mechanism: "SCRAM-SHA-1"},
		&DeleteSCRAMUser{},
	}
	for _, a := range bad {
		var e *Error
		if err := a.Validate(); !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("%T %+v: Validate = %v, want a 400", a, a, err)
		}
	}
	ct := &CreateTopic{Topic: "t"}
	if err := ct.Validate(); err != nil || ct.Partitions != -1 || ct.ReplicationFactor != -1 {
		t.Errorf("create-topic without counts: %+v %v, want the broker's defaults (-1)", ct, err)
	}
	ro := &ResetOffsets{Group: "g", To: "shift", Value: "-5", Topics: []string{"t:0,1"}}
	if err := ro.Validate(); err != nil || ro.target.Shift == nil || *ro.target.Shift != -5 || len(ro.scope["t"]) != 2 {
		t.Errorf("reset-offsets shift -5 on t:0,1: %+v %v", ro, err)
	}
	up := &UpsertSCRAMUser{User: "u", Password: "p"}
	if err := up.Validate(); err != nil || up.Iterations != 8192 {
		t.Errorf("upsert-scram-user defaults: %+v %v", up, err)
	}
	for _, name := range Names {
		if _, ok := New(name); !ok {
			t.Errorf("New(%q) has no action", name)
		}
	}
}

// fakeACLs allows alice CREATE on topics and READ on groups only, and
// ops ALTER on the cluster.
type fakeACLs struct{}

func (fakeACLs) Authorize(p, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, _ string) bool {
	return p == "User:ops" && typ == kmsg.ACLResourceTypeCluster && op == kmsg.ACLOperationAlter
}

func (fakeACLs) AuthorizeAny(p, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	return p == "User:alice" && (op == kmsg.ACLOperationCreate && typ == kmsg.ACLResourceTypeTopic || op == kmsg.ACLOperationRead && typ == kmsg.ACLResourceTypeGroup)
}

func TestCanOf(t *testing.T) {
	if got := CanOf(fakeACLs{}, "User:alice", "*"); got != (Can{CreateTopic: true}) {
		t.Errorf("alice: %+v, want createTopic only (READ on a group without READ on a topic resets nothing)", got)
	}
	if got := CanOf(fakeACLs{}, "User:ops", "*"); got != (Can{ACLs: true, SCRAM: true}) {
		t.Errorf("ops: %+v", got)
	}
}
