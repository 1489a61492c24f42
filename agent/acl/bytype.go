package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AuthorizeAny reports whether r may do op on at least one resource of type
// typ: Kafka's authorizeByResourceType (KIP-679), which lets an idempotent
// producer with WRITE on any topic call InitProducerId. An ALLOW pattern
// counts unless a DENY covers all it names: a DENY of LITERAL "*", a DENY
// of the same LITERAL name, or a DENY PREFIXED by a prefix of the ALLOW's
// name (or prefix).
func AuthorizeAny(p Policy, entries []Entry, r Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	for _, su := range p.SuperUsers {
		if su == r.Principal {
			return true
		}
	}
	var allows, denies []Entry
	anyOfType := false
	for _, e := range entries {
		if e.ResourceType != typ {
			continue
		}
		anyOfType = true
		if !e.matches(r) || !e.grants(op) {
			continue
		}
		if e.Permission == kmsg.ACLPermissionTypeDeny {
			if e.PatternType == kmsg.ACLResourcePatternTypeLiteral && e.ResourceName == Wildcard {
				return false
			}
			denies = append(denies, e)
		} else {
			allows = append(allows, e)
		}
	}
	if !anyOfType {
		return p.AllowIfNoACL
	}
	for _, a := range allows {
		if !deniedWhole(a, denies) {
			return true
		}
	}
	return false
}

// deniedWhole reports whether denies cover every resource allow names.
func deniedWhole(allow Entry, denies []Entry) bool {
	for _, d := range denies {
		switch d.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			if allow.PatternType == kmsg.ACLResourcePatternTypeLiteral && d.ResourceName == allow.ResourceName {
				return true
			}
		case kmsg.ACLResourcePatternTypePrefixed:
			if strings.HasPrefix(allow.ResourceName, d.ResourceName) {
				return true
			}
		}
	}
	return false
}
