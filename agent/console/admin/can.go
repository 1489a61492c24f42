package admin

// What a principal may do, for the page to hide the actions it may not.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

// Can is the actions a principal may perform, as GET /v1/console/session
// answers it. It only decides what the page shows: each action is still
// asked of Kafka's authorizer when it runs, and a refusal is shown with
// its code.
type Can struct {
	CreateTopic   bool `json:"createTopic"`
	AlterConfigs  bool `json:"alterConfigs"`
	DeleteRecords bool `json:"deleteRecords"`
	ResetOffsets  bool `json:"resetOffsets"`
	Drain         bool `json:"drain"`
	ACLs          bool `json:"acls"`
	SCRAM         bool `json:"scram"`
}

// All is everything: an operator's credential, or a cluster without an
// authorizer.
func All() Can { return Can{true, true, true, true, true, true, true} }

// Authorizer is the agent's ACL decision (agent/acl.Authorizer): one
// resource, or any resource of a type (Kafka's authorizeByResourceType).
type Authorizer interface {
	Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool
}

// CanOf asks the ACLs what principal, connecting from host, may do.
// Strata's Metadata and DescribeCluster report every operation as
// authorized whatever the ACLs say (agent/kafka/describecluster.go), so
// the answer comes from the authorizer itself: an action is shown when
// the principal may do it on at least one resource (a TOPIC action when
// some TOPIC ACL allows it). Drains are not Kafka requests: they take the
// HTTP port's operator credentials (agent/httpapi), never a Kafka login.
func CanOf(a Authorizer, principal, host string) Can {
	cluster := func(op kmsg.ACLOperation) bool {
		return a.Authorize(principal, host, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	anyOf := func(op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
		return a.AuthorizeAny(principal, host, op, typ)
	}
	return Can{
		CreateTopic:   cluster(kmsg.ACLOperationCreate) || anyOf(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic),
		AlterConfigs:  anyOf(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic),
		DeleteRecords: anyOf(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic),
		ResetOffsets:  anyOf(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup) && anyOf(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic),
		ACLs:          cluster(kmsg.ACLOperationAlter),
		SCRAM:         cluster(kmsg.ACLOperationAlter),
	}
}
