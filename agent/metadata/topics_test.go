package metadata

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestCreateListDeleteTopics(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)

		a, err := s.CreateTopic(ctx, "orders", 3, [][]int32{{0, 1}, {1, 2}, {2, 0}}, map[string]string{RetentionMs: "1000"})
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == ([16]byte{}) || a.Partitions != 3 || a.Configs[RetentionMs] != "1000" || a.CreatedAt.IsZero() {
			t.Fatalf("created topic = %+v", a)
		}
		if _, err := s.CreateTopic(ctx, "clicks", 1, assign(1, 0), nil); err != nil {
			t.Fatal(err)
		}

		got, err := s.Topic(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != a.ID || got.Partitions != 3 || got.Configs[RetentionMs] != "1000" || !got.CreatedAt.Equal(a.CreatedAt) {
			t.Fatalf("Topic = %+v, want %+v", got, a)
		}
		for p, want := range [][]int32{{0, 1}, {1, 2}, {2, 0}} {
			st, etag, err := s.PartitionState(ctx, a.ID, int32(p))
			if err != nil {
				t.Fatal(err)
			}
			if etag == "" || st.Leader != want[0] || st.LeaderEpoch != 0 || st.StateEpoch != 0 ||
				!slices.Equal(st.Replicas, want) || !slices.Equal(st.ISR, want) {
				t.Fatalf("partition %d state = %+v, want replicas=isr=%v leader %d", p, st, want, want[0])
			}
		}

		all, err := s.Topics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 || all[0].Name != "clicks" || all[1].Name != "orders" {
			t.Fatalf("Topics = %+v, want clicks, orders", all)
		}
		if all[0].Configs == nil {
			t.Fatal("Topics returned a nil Configs map")
		}

		if err := s.DeleteTopic(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Topic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("Topic after delete: %v, want ErrUnknownTopic", err)
		}
		if keys := keysUnder(t, b, topicPrefix(a.ID)); len(keys) != 0 {
			t.Fatalf("objects left after delete: %v", keys)
		}
		if err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("second delete: %v, want ErrUnknownTopic", err)
		}
		all, err = s.Topics(ctx)
		if err != nil || len(all) != 1 || all[0].Name != "clicks" {
			t.Fatalf("Topics after delete = %+v, %v", all, err)
		}

		// A re-created topic gets a new id: nothing of the old one is reused.
		again, err := s.CreateTopic(ctx, "orders", 1, assign(1, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID == a.ID {
			t.Fatal("re-created topic reused the old topic id")
		}
	})
}

func TestCreateTopicTwice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		first, err := s.CreateTopic(ctx, "t", 1, assign(1, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.CreateTopic(ctx, "t", 2, assign(2, 0), nil)
		if !errors.Is(err, ErrTopicExists) || !strings.Contains(err.Error(), `"t"`) {
			t.Fatalf("second create: %v, want ErrTopicExists naming the topic", err)
		}
		got, err := s.Topic(ctx, "t")
		if err != nil || got.ID != first.ID || got.Partitions != 1 {
			t.Fatalf("topic after failed re-create = %+v, %v", got, err)
		}
	})
}

// Many creators of one name: exactly one wins, the others see
// ErrTopicExists, and the losers leave no objects behind.
func TestCreateTopicRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		const n = 8
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := s.CreateTopic(ctx, "contested", 2, assign(2, 0), nil)
				errs <- err
			}()
		}
		wins := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				wins++
			case !errors.Is(err, ErrTopicExists):
				t.Errorf("unexpected error: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d creators won, want 1", wins)
		}
		tp, err := s.Topic(ctx, "contested")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range keysUnder(t, b, topicsPrefix) {
			if !strings.HasPrefix(key, topicNamesPrefix) && !strings.HasPrefix(key, topicPrefix(tp.ID)) {
				t.Errorf("loser left %s behind", key)
			}
		}
	})
}

func TestCreateTopicRejectsBadInput(t *testing.T) {
	s := New(objstore.NewMem(), nil)
	ctx := testContext(t)
	long := strings.Repeat("a", 250)
	cases := []struct {
		name       string
		topic      string
		partitions int32
		assignment [][]int32
		configs    map[string]string
		want       error
		mention    string
	}{
		{"empty name", "", 1, assign(1, 0), nil, ErrInvalidTopic, "empty"},
		{"dot", ".", 1, assign(1, 0), nil, ErrInvalidTopic, `"."`},
		{"dotdot", "..", 1, assign(1, 0), nil, ErrInvalidTopic, `".."`},
		{"slash", "a/b", 1, assign(1, 0), nil, ErrInvalidTopic, `"a/b"`},
		{"space", "a b", 1, assign(1, 0), nil, ErrInvalidTopic, `"a b"`},
		{"unicode", "tópico", 1, assign(1, 0), nil, ErrInvalidTopic, "tópico"},
		{"too long", long, 1, assign(1, 0), nil, ErrInvalidTopic, "250"},
		{"zero partitions", "t", 0, nil, nil, ErrInvalidPartitions, `"t"`},
		{"too many partitions", "t", DefaultSettings().MaxPartitions + 1, nil, nil, ErrInvalidPartitions, `"t"`},
		{"short assignment", "t", 2, assign(1, 0), nil, ErrInvalidReplicaAssignment, `"t"`},
		{"empty replicas", "t", 1, [][]int32{{}}, nil, ErrInvalidReplicaAssignment, "partition 0"},
		{"duplicate replica", "t", 1, [][]int32{{1, 1}}, nil, ErrInvalidReplicaAssignment, "agent 1"},
		{"negative replica", "t", 1, [][]int32{{-1}}, nil, ErrInvalidReplicaAssignment, "-1"},
		{"unknown config", "t", 1, assign(1, 0), map[string]string{"retention.mss": "1"}, ErrInvalidConfig, "retention.mss"},
		{"bad config value", "t", 1, assign(1, 0), map[string]string{RetentionMs: "soon"}, ErrInvalidConfig, "retention.ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.CreateTopic(ctx, c.topic, c.partitions, c.assignment, c.configs)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.want, c.mention)
			}
		})
	}
	if all, err := s.Topics(ctx); err != nil || len(all) != 0 {
		t.Fatalf("rejected creates left topics: %v, %v", all, err)
	}
}

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c.d", "__consumer_offsets", strings.Repeat("x", 249), "...", "0"} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("ValidateTopicName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "a/b", "a\x00", "ü", strings.Repeat("x", 250), "a:b"} {
		if err := ValidateTopicName(bad); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopicName(%q) = %v, want ErrInvalidTopic", bad, err)
		}
	}
}
