package acl

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
	read    = kmsg.ACLOperationRead
	write   = kmsg.ACLOperationWrite
	descr   = kmsg.ACLOperationDescribe
)

func entry(typ kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Entry {
	return Entry{ResourceType: typ, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestAuthorize(t *testing.T) {
	alice := Request{Principal: "User:alice", Host: "10.0.0.1"}
	bob := Request{Principal: "User:bob", Host: "10.0.0.2"}
	entries := []Entry{
		entry(topic, "orders", literal, "User:alice", "*", read, allow),
		entry(topic, "logs-", prefix, "User:*", "*", write, allow),
		entry(topic, "logs-secret", literal, "User:bob", "*", kmsg.ACLOperationAll, deny),
		entry(topic, "*", literal, "User:carol", "*", descr, allow),
		entry(group, "app", literal, "User:alice", "10.0.0.1", read, allow),
		entry(topic, "payments", literal, "User:alice", "*", read, deny),
		entry(topic, "payments", literal, "User:alice", "*", kmsg.ACLOperationAll, allow),
	}
	p := Policy{SuperUsers: []string{"User:admin"}}
	for _, tc := range []struct {
		name string
		r    Request
		op   kmsg.ACLOperation
		typ  kmsg.ACLResourceType
		res  string
		want bool
	}{
		{"literal allow", alice, read, topic, "orders", true},
		{"other principal", bob, read, topic, "orders", false},
		{"other operation", alice, write, topic, "orders", false},
		{"READ implies DESCRIBE", alice, descr, topic, "orders", true},
		{"prefixed, wildcard principal", bob, write, topic, "logs-app", true},
		{"prefix does not match", bob, write, topic, "log", false},
		{"DENY wins over a prefixed ALLOW", bob, write, topic, "logs-secret", false},
		{"DENY of another principal", alice, write, topic, "logs-secret", true},
		{"wildcard resource", Request{Principal: "User:carol", Host: "h"}, descr, topic, "anything", true},
		{"wildcard resource, other op", Request{Principal: "User:carol", Host: "h"}, read, topic, "anything", false},
		{"host matches", alice, read, group, "app", true},
		{"host differs", Request{Principal: "User:alice", Host: "10.0.0.9"}, read, group, "app", false},
		{"DENY READ beats ALLOW ALL", alice, read, topic, "payments", false},
		{"DENY READ does not deny DESCRIBE", alice, descr, topic, "payments", true},
		{"no ACL: denied by default", alice, read, group, "nobody", false},
		{"super user", Request{Principal: "User:admin", Host: "h"}, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterName, true},
		{"principal type differs from wildcard's", Request{Principal: "Group:x", Host: "h"}, write, topic, "logs-a", false},
	} {
		if got := Authorize(p, entries, tc.r, tc.op, tc.typ, tc.res); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	open := Policy{AllowIfNoACL: true}
	if !Authorize(open, entries, bob, read, group, "nobody") {
		t.Error("allow.everyone.if.no.acl.found: a resource without ACLs is closed")
	}
	if Authorize(open, entries, bob, read, topic, "orders") {
		t.Error("allow.everyone.if.no.acl.found opened a resource that has ACLs")
	}
	if !Authorize(Policy{}, []Entry{entry(topic, "t", literal, "User:x", "*", kmsg.ACLOperationAlterConfigs, allow)}, Request{"User:x", "h"}, kmsg.ACLOperationDescribeConfigs, topic, "t") {
		t.Error("ALTER_CONFIGS does not imply DESCRIBE_CONFIGS")
	}
}

func TestValidate(t *testing.T) {
	good := entry(topic, "t", literal, "User:a", "*", read, allow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*Entry)
		want string
	}{
		{func(e *Entry) { e.ResourceType = kmsg.ACLResourceTypeAny }, "cannot be in an ACL"},
		{func(e *Entry) { e.PatternType = kmsg.ACLResourcePatternTypeMatch }, "want LITERAL or PREFIXED"},
		{func(e *Entry) { e.ResourceName = "" }, "empty"},
		{func(e *Entry) { e.ResourceType, e.ResourceName = kmsg.ACLResourceTypeCluster, "c" }, "kafka-cluster"},
		{func(e *Entry) { e.Principal = "alice" }, "want Type:name"},
		{func(e *Entry) { e.Host = "" }, "host is empty"},
		{func(e *Entry) { e.Operation = kmsg.ACLOperationAny }, "cannot be in an ACL"},
		{func(e *Entry) { e.Permission = kmsg.ACLPermissionTypeAny }, "want ALLOW or DENY"},
	} {
		e := good
		tc.mod(&e)
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", e, err, tc.want)
		}
	}
}

func TestFilter(t *testing.T) {
	entries := []Entry{
		entry(topic, "orders", literal, "User:a", "*", read, allow),
		entry(topic, "ord", prefix, "User:b", "*", write, allow),
		entry(topic, "*", literal, "User:c", "*", descr, allow),
		entry(group, "orders", literal, "User:a", "*", read, deny),
	}
	name := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		f    Filter
		want int
	}{
		{"everything", Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 4},
		{"topics named orders, any pattern", Filter{ResourceType: topic, ResourceName: name("orders"), PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{"MATCH orders", Filter{ResourceType: topic, ResourceName: name("orders"), PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 3},
		{"prefixed only", Filter{ResourceType: topic, PatternType: prefix, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{"DENY of User:a", Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: name("User:a"), Operation: kmsg.ACLOperationAny, Permission: deny}, 1},
	} {
		n := 0
		for _, e := range entries {
			if tc.f.Matches(e) {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("%s: %d entries, want %d", tc.name, n, tc.want)
		}
	}
	if err := (Filter{ResourceType: topic, PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}).Validate(); err == nil {
		t.Error("MATCH without a name was accepted")
	}
}
