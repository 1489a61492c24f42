// Package acl is Kafka's authorization model (--authorizer acl): access
// control entries that allow or deny a principal, from a host, an
// operation on resources named literally or by prefix, and the decision
// Kafka's StandardAuthorizer makes from them. The enums are the wire's
// (kmsg), so what a client sends is what is stored and matched.
//
// The decision, for a principal P at host H asking for operation O on a
// resource R of type T:
//
//  1. P is a super user (--super-users): allowed.
//  2. The entries that apply to R are those of type T whose pattern is
//     LITERAL with R's name, LITERAL "*", or PREFIXED with a prefix of R's
//     name. If none apply at all, allowed when
//     allow.everyone.if.no.acl.found is set, else denied.
//  3. An applying DENY entry whose principal is P or User:*, host H or *,
//     and operation O or ALL: denied. DENY wins over ALLOW.
//  4. An applying ALLOW entry that matches likewise: allowed. An ALLOW of
//     READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of
//     ALTER_CONFIGS allows DESCRIBE_CONFIGS, as in Kafka.
//  5. Otherwise denied.
package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the one name a CLUSTER resource has.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name and host that match all.
const Wildcard = "*"

// Entry is one access control entry with its resource pattern.
type Entry struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"` // "User:alice", "User:*"
	Host         string                      `json:"host"`      // an IP, or "*"
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

func (e Entry) String() string {
	return fmt.Sprintf("(%s %s %s: %s %s %s from %s)", e.PatternType, e.ResourceType, e.ResourceName,
		e.Principal, e.Permission, e.Operation, e.Host)
}

// Validate names what makes e unfit to be stored, as CreateAcls's error
// message; the error code is INVALID_REQUEST.
func (e Entry) Validate() error {
	switch e.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return fmt.Errorf("resource type %s cannot be in an ACL", e.ResourceType)
	}
	if e.PatternType != kmsg.ACLResourcePatternTypeLiteral && e.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("pattern type %s cannot be in an ACL; want LITERAL or PREFIXED", e.PatternType)
	}
	if e.ResourceName == "" {
		return errors.New("the resource name is empty")
	}
	if e.ResourceType == kmsg.ACLResourceTypeCluster && e.ResourceName != ClusterName {
		return fmt.Errorf("a CLUSTER resource is named %q, not %q", ClusterName, e.ResourceName)
	}
	if _, _, err := ParsePrincipal(e.Principal); err != nil {
		return err
	}
	if e.Host == "" {
		return errors.New("the host is empty; use * for every host")
	}
	switch e.Operation {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return fmt.Errorf("operation %s cannot be in an ACL", e.Operation)
	}
	if e.Permission != kmsg.ACLPermissionTypeAllow && e.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("permission %s cannot be in an ACL; want ALLOW or DENY", e.Permission)
	}
	return nil
}

// ParsePrincipal splits "Type:name" (Kafka's KafkaPrincipal form).
func ParsePrincipal(s string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" || name == "" {
		return "", "", fmt.Errorf("principal %q: want Type:name, e.g. User:alice", s)
	}
	return typ, name, nil
}

// applies reports whether e's pattern covers a resource of type typ named
// name.
func (e Entry) applies(typ kmsg.ACLResourceType, name string) bool {
	if e.ResourceType != typ {
		return false
	}
	switch e.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return e.ResourceName == name || e.ResourceName == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, e.ResourceName)
	}
	return false
}

// grants reports whether e, a matching entry of its permission, covers op.
func (e Entry) grants(op kmsg.ACLOperation) bool {
	if e.Operation == op || e.Operation == kmsg.ACLOperationAll {
		return true
	}
	if e.Permission != kmsg.ACLPermissionTypeAllow {
		return false // a DENY of READ does not deny DESCRIBE
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch e.Operation {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return e.Operation == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Request is who asks: a principal ("User:alice"; "User:ANONYMOUS" for an
// unauthenticated connection, as in Kafka) at a host (the client's IP).
type Request struct {
	Principal string
	Host      string
}

func (e Entry) matches(r Request) bool {
	if e.Host != Wildcard && e.Host != r.Host {
		return false
	}
	if e.Principal == r.Principal {
		return true
	}
	typ, name, err := ParsePrincipal(e.Principal)
	if err != nil || name != Wildcard {
		return false
	}
	rtyp, _, _ := strings.Cut(r.Principal, ":")
	return typ == rtyp
}

// Policy is what decides beside the entries.
type Policy struct {
	// SuperUsers (--super-users) are allowed everything.
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found: a resource no entry
	// applies to is open to all.
	AllowIfNoACL bool
}

// Authorize decides r's op on the resource of type typ named name, from
// entries (see the package comment).
func Authorize(p Policy, entries []Entry, r Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	for _, su := range p.SuperUsers {
		if su == r.Principal {
			return true
		}
	}
	any, allowed := false, false
	for _, e := range entries {
		if !e.applies(typ, name) {
			continue
		}
		any = true
		if !e.matches(r) || !e.grants(op) {
			continue
		}
		if e.Permission == kmsg.ACLPermissionTypeDeny {
			return false
		}
		allowed = true
	}
	if !any {
		return p.AllowIfNoACL
	}
	return allowed
}

// Filter selects entries, as DescribeAcls and DeleteAcls send it: a nil
// name, principal or host and ANY enums match every entry; pattern type
// MATCH selects the entries that apply to the resource named (LITERAL
// name, LITERAL *, PREFIXED prefixes of it).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate names what makes f unusable; DescribeAcls answers
// INVALID_REQUEST with it.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown:
		return errors.New("the filter's resource type is UNKNOWN")
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown:
		return errors.New("the filter's pattern type is UNKNOWN")
	case f.Operation == kmsg.ACLOperationUnknown:
		return errors.New("the filter's operation is UNKNOWN")
	case f.Permission == kmsg.ACLPermissionTypeUnknown:
		return errors.New("the filter's permission is UNKNOWN")
	case f.PatternType == kmsg.ACLResourcePatternTypeMatch && f.ResourceName == nil:
		return errors.New("pattern type MATCH needs a resource name")
	}
	return nil
}

// Matches reports whether f selects e.
func (f Filter) Matches(e Entry) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != e.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		if f.ResourceName != nil && *f.ResourceName != e.ResourceName {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if !e.applies(e.ResourceType, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != e.PatternType || f.ResourceName != nil && *f.ResourceName != e.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != e.Principal {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != e.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == e.Permission
}
