package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAuthorizeAny(t *testing.T) {
	topic, lit, pre := kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	write := kmsg.ACLOperationWrite
	entry := func(perm kmsg.ACLPermissionType, pattern kmsg.ACLResourcePatternType, name string) Entry {
		return Entry{ResourceType: topic, ResourceName: name, PatternType: pattern, Principal: "User:bob", Host: "*", Operation: write, Permission: perm}
	}
	allow := func(p kmsg.ACLResourcePatternType, n string) Entry { return entry(kmsg.ACLPermissionTypeAllow, p, n) }
	deny := func(p kmsg.ACLResourcePatternType, n string) Entry { return entry(kmsg.ACLPermissionTypeDeny, p, n) }
	bob := Request{Principal: "User:bob", Host: "10.0.0.1"}
	for _, tc := range []struct {
		name    string
		policy  Policy
		entries []Entry
		want    bool
	}{
		{"no ACLs", Policy{}, nil, false},
		{"no ACLs, allow if none", Policy{AllowIfNoACL: true}, nil, true},
		{"super user", Policy{SuperUsers: []string{"User:bob"}}, nil, true},
		{"one literal allow", Policy{}, []Entry{allow(lit, "orders")}, true},
		{"allow denied by the same literal", Policy{}, []Entry{allow(lit, "orders"), deny(lit, "orders")}, false},
		{"allow, deny of another literal", Policy{}, []Entry{allow(lit, "orders"), deny(lit, "other")}, true},
		{"prefix allow under a prefix deny", Policy{}, []Entry{allow(pre, "ord"), deny(pre, "o")}, false},
		{"prefix allow over a longer prefix deny", Policy{}, []Entry{allow(pre, "o"), deny(pre, "ord")}, true},
		{"deny of every topic", Policy{}, []Entry{allow(pre, "ord"), deny(lit, "*")}, false},
		{"allow of READ only", Policy{}, []Entry{{ResourceType: topic, ResourceName: "orders", PatternType: lit,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}}, false},
	} {
		if got := AuthorizeAny(tc.policy, tc.entries, bob, write, topic); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
