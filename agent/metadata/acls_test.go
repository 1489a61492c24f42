package metadata

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestACLsConcurrentUpdates: agents adding entries at once lose none, and
// a re-read sees them all.
func TestACLsConcurrentUpdates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := context.Background()
		s := New(b, nil)
		if got, etag, err := ReadList[acl.Entry](ctx, s, ACLsKey); err != nil || len(got) != 0 || etag != "" {
			t.Fatalf("no ACLs yet: %v %q %v", got, etag, err)
		}
		const writers = 8
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				e := acl.Entry{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
					Principal: "User:u" + string(rune('a'+i)), Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
				if _, err := UpdateList(ctx, New(b, nil), ACLsKey, func(es []acl.Entry) ([]acl.Entry, error) { return append(es, e), nil }); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		got, etag, err := ReadList[acl.Entry](ctx, s, ACLsKey)
		if err != nil || len(got) != writers || etag == "" {
			t.Fatalf("after %d concurrent adds: %d entries, etag %q, %v", writers, len(got), etag, err)
		}
	})
}
