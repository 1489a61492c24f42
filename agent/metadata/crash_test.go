package metadata

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// A name object whose topic.json is missing is treated as absent, left alone
// by DeleteTopic, and replaced by CreateTopic.
func TestDanglingNameIsAbsentAndRepaired(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		ghost := [16]byte{1, 2, 3}
		data := encodeObject(nameObject{Version: objectVersion, Name: "ghost", TopicID: FormatTopicID(ghost)})
		if _, err := b.Put(ctx, nameKey("ghost"), data, objstore.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTopic(ctx, "real", 1, assign(1, 0), nil); err != nil {
			t.Fatal(err)
		}

		if _, err := s.Topic(ctx, "ghost"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("Topic(dangling) = %v, want ErrUnknownTopic", err)
		}
		all, err := s.Topics(ctx)
		if err != nil || len(all) != 1 || all[0].Name != "real" {
			t.Fatalf("Topics = %+v, %v; want only real", all, err)
		}
		if _, err := s.UpdateTopic(ctx, "ghost", func(*Topic) error { return nil }); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("UpdateTopic(dangling) = %v, want ErrUnknownTopic", err)
		}
		if err := s.DeleteTopic(ctx, "ghost"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("DeleteTopic(dangling) = %v, want ErrUnknownTopic", err)
		}

		created, err := s.CreateTopic(ctx, "ghost", 2, assign(2, 0), nil)
		if err != nil {
			t.Fatalf("CreateTopic over a dangling name: %v", err)
		}
		got, err := s.Topic(ctx, "ghost")
		if err != nil || got.ID != created.ID || got.ID == ghost || got.Partitions != 2 {
			t.Fatalf("Topic after repair = %+v, %v", got, err)
		}
	})
}

// A create that dies before its commit leaves an unnamed tree: invisible to
// readers, kept while younger than the grace period, then collected.
func TestCrashBeforeCommitLeavesCollectableOrphan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, inner objstore.Bucket) {
		ctx := testContext(t)
		b := objstore.NewFaulty(inner)
		s := newTestStore(t, b)
		// Puts: topic.json, two state.json, then the name. Fail the name and
		// every delete, as a crash at that point would.
		b.FailNext(objstore.OpPut, 4, nil)
		b.FailAlways(objstore.OpDelete, nil)
		if _, err := s.CreateTopic(ctx, "t", 2, assign(2, 0), nil); !errors.Is(err, objstore.ErrInjected) {
			t.Fatalf("CreateTopic = %v, want the injected error", err)
		}
		b.Clear()
		orphans := treeKeys(t, inner)
		if len(orphans) != 3 {
			t.Fatalf("expected topic.json and 2 states left behind, got %v", orphans)
		}
		if _, err := s.Topic(ctx, "t"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("Topic = %v, want ErrUnknownTopic", err)
		}
		if all, err := s.Topics(ctx); err != nil || len(all) != 0 {
			t.Fatalf("Topics = %v, %v; want none", all, err)
		}

		// A live topic is never collected, however old.
		live, err := s.CreateTopic(ctx, "live", 1, assign(1, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.CleanOrphans(ctx); err != nil || n != 0 {
			t.Fatalf("CleanOrphans of a fresh orphan = %d, %v; want 0 (grace period)", n, err)
		}
		s.now = func() time.Time { return time.Now().Add(s.settings.OrphanGrace + time.Minute) }
		if n, err := s.CleanOrphans(ctx); err != nil || n != 1 {
			t.Fatalf("CleanOrphans after the grace period = %d, %v; want 1", n, err)
		}
		left := treeKeys(t, inner)
		for _, key := range left {
			if !strings.HasPrefix(key, topicPrefix(live.ID)) {
				t.Errorf("left behind: %s", key)
			}
		}
		if len(left) != 2 {
			t.Fatalf("live topic's objects = %v, want topic.json and one state", left)
		}
		if _, err := s.CreateTopic(ctx, "t", 1, assign(1, 0), nil); err != nil {
			t.Fatalf("create after collection: %v", err)
		}
	})
}

// A failed create with a working bucket cleans up after itself.
func TestFailedCreateRemovesItsObjects(t *testing.T) {
	forEachBackend(t, func(t *testing.T, inner objstore.Bucket) {
		ctx := testContext(t)
		b := objstore.NewFaulty(inner)
		s := newTestStore(t, b)
		b.FailNext(objstore.OpPut, 3, nil) // the second state.json
		if _, err := s.CreateTopic(ctx, "t", 2, assign(2, 0), nil); !errors.Is(err, objstore.ErrInjected) {
			t.Fatalf("CreateTopic = %v, want the injected error", err)
		}
		if keys := keysUnder(t, inner, topicsPrefix); len(keys) != 0 {
			t.Fatalf("failed create left %v", keys)
		}
	})
}

// A delete that dies after removing the name has deleted the topic; what is
// left is an orphan.
func TestCrashDuringDelete(t *testing.T) {
	forEachBackend(t, func(t *testing.T, inner objstore.Bucket) {
		ctx := testContext(t)
		b := objstore.NewFaulty(inner)
		s := newTestStore(t, b)
		if _, err := s.CreateTopic(ctx, "t", 3, assign(3, 0), nil); err != nil {
			t.Fatal(err)
		}
		b.FailAlways(objstore.OpDelete, nil)
		if err := s.DeleteTopic(ctx, "t"); !errors.Is(err, objstore.ErrInjected) {
			t.Fatalf("DeleteTopic with failing deletes = %v, want the injected error", err)
		}
		if _, err := s.Topic(ctx, "t"); err != nil {
			t.Fatalf("a delete that removed nothing must leave the topic: %v", err)
		}
		b.Clear()
		b.FailNext(objstore.OpDelete, 2, nil) // name goes, the tree does not
		if err := s.DeleteTopic(ctx, "t"); err != nil {
			t.Fatalf("DeleteTopic = %v; the name was deleted, so it succeeded", err)
		}
		if _, err := s.Topic(ctx, "t"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("Topic after delete = %v", err)
		}
		if len(treeKeys(t, inner)) == 0 {
			t.Fatal("expected leftovers to collect")
		}
		s.now = func() time.Time { return time.Now().Add(s.settings.OrphanGrace + time.Minute) }
		if n, err := s.CleanOrphans(ctx); err != nil || n != 1 {
			t.Fatalf("CleanOrphans = %d, %v; want 1", n, err)
		}
		if left := keysUnder(t, inner, topicsPrefix); len(left) != 0 {
			t.Fatalf("left after collection: %v", left)
		}
	})
}

// AddPartitions replaces a state.json left by an AddPartitions that crashed
// before its commit, but never a committed partition's state.
func TestAddPartitionsReplacesLeftover(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		tp, err := s.CreateTopic(ctx, "t", 1, assign(1, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		leftover := encodeObject(initialState([]int32{7}))
		if _, err := b.Put(ctx, stateKey(tp.ID, 1), leftover, objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddPartitions(ctx, "t", 3, [][]int32{{1}, {2}}); err != nil {
			t.Fatal(err)
		}
		for p, want := range []int32{0, 1, 2} {
			st, _, err := s.PartitionState(ctx, tp.ID, int32(p))
			if err != nil || st.Leader != want {
				t.Fatalf("partition %d = %+v, %v; want leader %d", p, st, err, want)
			}
		}
	})
}

func TestUnknownVersionAndCorruptObjects(t *testing.T) {
	ctx := testContext(t)
	b := objstore.NewMem()
	s := newTestStore(t, b)
	tp, err := s.CreateTopic(ctx, "future", 1, assign(1, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "fine", 1, assign(1, 0), nil); err != nil {
		t.Fatal(err)
	}
	put := func(key, data string) {
		t.Helper()
		if _, err := b.Put(ctx, key, []byte(data), objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put(topicKey(tp.ID), `{"version":2,"whatever":["new","shape"]}`)
	_, err = s.Topic(ctx, "future")
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 2 || !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("Topic(v2) = %v, want a VersionError for version 2", err)
	}
	all, err := s.Topics(ctx)
	if err != nil || len(all) != 1 || all[0].Name != "fine" {
		t.Fatalf("Topics with one unreadable topic = %+v, %v; want just fine", all, err)
	}
	if _, err := s.CreateTopic(ctx, "future", 1, assign(1, 0), nil); err == nil {
		t.Fatal("CreateTopic over an unreadable topic succeeded")
	}

	for _, bad := range []string{`{"leader":0}`, `{"version":0}`, `not json`, `{"version":1,"leader":5,"replicas":[1],"isr":[1]}`} {
		put(stateKey(tp.ID, 0), bad)
		if _, _, err := s.PartitionState(ctx, tp.ID, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("PartitionState(%s) = %v, want ErrCorrupt", bad, err)
		}
	}
	put(clusterKey, `{"version":3}`)
	if _, err := s.InitCluster(ctx); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("InitCluster(v3) = %v, want ErrUnsupportedVersion", err)
	}
}

// treeKeys lists every object under topics/ except the names.
func treeKeys(t *testing.T, b objstore.Bucket) []string {
	t.Helper()
	var out []string
	for _, key := range keysUnder(t, b, topicsPrefix) {
		if !strings.HasPrefix(key, topicNamesPrefix) {
			out = append(out, key)
		}
	}
	return out
}
