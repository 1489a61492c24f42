package acl

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/tiering/objstore"
)

func readTopic(principal string) Entry {
	return Entry{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: principal, Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
}

// matchAll selects every entry, or principal's when it is not nil.
func matchAll(principal *string) Filter {
	return Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: principal,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
}

// TestAuthorizersShareTheStore: agents adding entries at once lose none;
// each writer decides with its own entry as soon as its write returns,
// and announces it; another agent decides with all of them after one
// refresh, and a delete through it reaches the first after theirs.
func TestAuthorizersShareTheStore(t *testing.T) {
	ctx := context.Background()
	b, err := objstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const writers = 8
	var announced atomic.Int32
	announce := func() error { announced.Add(1); return nil }
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			a := NewAuthorizer(metadata.New(b, nil), Policy{}, announce, nil)
			if err := a.Load(ctx); err != nil {
				t.Error(err)
				return
			}
			p := fmt.Sprintf("User:u%d", i)
			if err := a.CreateACLs(ctx, []Entry{readTopic(p)}); err != nil {
				t.Error(err)
				return
			}
			if !a.Authorize(p, "10.0.0.1", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
				t.Errorf("%s: its own entry is not in its copy after CreateACLs", p)
			}
		})
	}
	wg.Wait()
	if n := announced.Load(); n != writers {
		t.Errorf("%d announcements, want one per write (%d)", n, writers)
	}
	other := NewAuthorizer(metadata.New(b, nil), Policy{}, nil, nil)
	if other.Authorize("User:u0", "h", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("an authorizer that never read the ACLs allowed a read")
	}
	if err := other.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := other.DescribeACLs(matchAll(nil)); len(got) != writers {
		t.Fatalf("after %d concurrent adds: %d entries: %v", writers, len(got), got)
	}
	u3 := "User:u3"
	deleted, err := other.DeleteACLs(ctx, []Filter{matchAll(&u3)})
	if err != nil || len(deleted) != 1 || len(deleted[0]) != 1 {
		t.Fatalf("delete %s: %v, %v", u3, deleted, err)
	}
	if other.Authorize(u3, "h", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t") {
		t.Errorf("%s still allowed by the agent that deleted its entry", u3)
	}
}

// TestDisabledAuthorizer: without --authorizer acl everything is allowed
// and the write paths refuse.
func TestDisabledAuthorizer(t *testing.T) {
	var a *Authorizer
	if a.AuthorizerEnabled() || !a.Authorize("User:x", "h", kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, "t") {
		t.Fatal("a nil authorizer must be disabled and allow everything")
	}
	if err := a.CreateACLs(context.Background(), []Entry{readTopic("User:x")}); err != ErrDisabled {
		t.Fatalf("CreateACLs on a disabled authorizer: %v", err)
	}
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}
