package metadata

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestAgentLoad: a report reads back as written (rates rounded to whole
// bytes), a missing one is not an error, and a report that names another
// agent or carries a negative rate is corrupt.
func TestAgentLoad(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := context.Background()
		s := New(b, nil)
		if _, ok, err := s.AgentLoad(ctx, 4); ok || err != nil {
			t.Fatalf("no report yet: ok %v, err %v", ok, err)
		}
		id := [16]byte{1, 15: 7}
		want := AgentLoad{AgentID: 4, WrittenAt: time.Unix(1_700_000_000, 0).UTC(), Partitions: []PartitionLoad{
			{TopicID: id, Partition: 2, Leader: true, RoleAge: 90 * time.Second, BytesIn: 1000.4, BytesOut: 2000, ReplicaBytesOut: 1000, LocalBytes: 1 << 30},
			{TopicID: id, Partition: 3, RoleAge: time.Second, BytesIn: 10},
		}}
		if err := s.PutAgentLoad(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.AgentLoad(ctx, 4)
		if err != nil || !ok {
			t.Fatalf("read back: ok %v, err %v", ok, err)
		}
		want.Partitions[0].BytesIn = 1000
		if !got.WrittenAt.Equal(want.WrittenAt) || len(got.Partitions) != 2 || got.Partitions[0] != want.Partitions[0] || got.Partitions[1] != want.Partitions[1] {
			t.Fatalf("read back %+v, want %+v", got, want)
		}
		for _, bad := range []string{
			`{"version":1,"agent_id":5,"partitions":[]}`,
			`{"version":1,"agent_id":4,"partitions":[{"topic_id":"0100000000000000000000000000000f","p":1,"in":-1}]}`,
			`{"version":1,"agent_id":4,"partitions":[{"topic_id":"xyz","p":1}]}`,
		} {
			if _, err := b.Put(ctx, loadKey(4), []byte(bad), objstore.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.AgentLoad(ctx, 4); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: err %v, want corrupt", bad, err)
			}
		}
	})
}
