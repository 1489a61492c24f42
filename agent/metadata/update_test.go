package metadata

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Concurrent read-modify-writes lose nothing: every goroutine increments
// retention.ms some times, and one goroutine per other config sets its own
// key; at the end the counter is exact and every key is there.
func TestUpdateTopicConcurrentNoLostUpdates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		if _, err := s.CreateTopic(ctx, "t", 1, assign(1, 0), map[string]string{RetentionMs: "0"}); err != nil {
			t.Fatal(err)
		}
		const incrementers, increments = 6, 5
		var setters []ConfigDef
		for _, d := range TopicConfigDefs() {
			if d.Name != RetentionMs {
				setters = append(setters, d)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, incrementers*increments+len(setters))
		for range incrementers {
			wg.Go(func() {
				for range increments {
					_, err := s.UpdateTopic(ctx, "t", func(tp *Topic) error {
						n, err := strconv.ParseInt(tp.Configs[RetentionMs], 10, 64)
						if err != nil {
							return err
						}
						tp.Configs[RetentionMs] = strconv.FormatInt(n+1, 10)
						return nil
					})
					errs <- err
				}
			})
		}
		for _, d := range setters {
			wg.Go(func() {
				_, err := s.UpdateTopic(ctx, "t", func(tp *Topic) error {
					tp.Configs[d.Name] = d.Default
					return nil
				})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		tp, err := s.Topic(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tp.Configs[RetentionMs], strconv.Itoa(incrementers*increments); got != want {
			t.Errorf("retention.ms = %s, want %s: updates were lost", got, want)
		}
		for _, d := range setters {
			if tp.Configs[d.Name] != d.Default {
				t.Errorf("config %s = %q, want %q: an update was lost", d.Name, tp.Configs[d.Name], d.Default)
			}
		}
	})
}

func TestUpdateTopicRules(t *testing.T) {
	ctx := testContext(t)
	s := newTestStore(t, objstore.NewMem())
	orig, err := s.CreateTopic(ctx, "t", 2, assign(2, 0), map[string]string{RetentionMs: "5"})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	cases := []struct {
		name string
		fn   func(*Topic) error
		want error
	}{
		{"fn error", func(*Topic) error { return boom }, boom},
		{"grow", func(tp *Topic) error { tp.Partitions++; return nil }, ErrInvalidPartitions},
		{"shrink", func(tp *Topic) error { tp.Partitions--; return nil }, ErrInvalidPartitions},
		{"bad config", func(tp *Topic) error { tp.Configs[SegmentBytes] = "1"; return nil }, ErrInvalidConfig},
		{"unknown config", func(tp *Topic) error { tp.Configs["x"] = "1"; return nil }, ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.UpdateTopic(ctx, "t", c.fn); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	if _, err := s.UpdateTopic(ctx, "t", func(tp *Topic) error { tp.Name = "u"; return nil }); err == nil {
		t.Fatal("renaming through UpdateTopic succeeded")
	}
	if _, err := s.UpdateTopic(ctx, "missing", func(*Topic) error { return nil }); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("update of a missing topic: %v", err)
	}
	// None of the rejected updates reached the store.
	got, err := s.Topic(ctx, "t")
	if err != nil || got.Partitions != 2 || len(got.Configs) != 1 || got.Configs[RetentionMs] != "5" {
		t.Fatalf("topic after rejected updates = %+v, %v (was %+v)", got, err, orig)
	}
	// Deleting a config key works and returns the new topic.
	up, err := s.UpdateTopic(ctx, "t", func(tp *Topic) error { delete(tp.Configs, RetentionMs); return nil })
	if err != nil || len(up.Configs) != 0 {
		t.Fatalf("delete config = %+v, %v", up, err)
	}
}

func TestAddPartitions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		tp, err := s.CreateTopic(ctx, "t", 2, [][]int32{{0, 1}, {1, 0}}, map[string]string{RetentionMs: "9"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			total int32
			as    [][]int32
			want  error
		}{
			{2, nil, ErrInvalidPartitions},
			{1, nil, ErrInvalidPartitions},
			{4, [][]int32{{0}}, ErrInvalidReplicaAssignment},
			{3, [][]int32{{0, 0}}, ErrInvalidReplicaAssignment},
			{s.settings.MaxPartitions + 1, nil, ErrInvalidPartitions},
		} {
			if _, err := s.AddPartitions(ctx, "t", c.total, c.as); !errors.Is(err, c.want) {
				t.Errorf("AddPartitions(%d, %v) = %v, want %v", c.total, c.as, err, c.want)
			}
		}
		if _, _, err := s.PartitionState(ctx, tp.ID, 2); !errors.Is(err, ErrUnknownPartition) || !objstore.IsNotFound(err) {
			t.Fatalf("rejected growth wrote state: %v", err)
		}

		grown, err := s.AddPartitions(ctx, "t", 4, [][]int32{{2, 0}, {0, 2}})
		if err != nil {
			t.Fatal(err)
		}
		if grown.Partitions != 4 || grown.Configs[RetentionMs] != "9" || grown.ID != tp.ID {
			t.Fatalf("grown = %+v", grown)
		}
		for p, leader := range []int32{0, 1, 2, 0} {
			st, _, err := s.PartitionState(ctx, tp.ID, int32(p))
			if err != nil || st.Leader != leader {
				t.Fatalf("partition %d = %+v, %v; want leader %d", p, st, err, leader)
			}
		}
		if got, err := s.Topic(ctx, "t"); err != nil || got.Partitions != 4 {
			t.Fatalf("Topic after growth = %+v, %v", got, err)
		}
		if _, err := s.AddPartitions(ctx, "missing", 4, nil); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("AddPartitions(missing) = %v", err)
		}
	})
}

// Concurrent growers: the final count is one of the requests, every
// partition below it has a state, and a grower that lost says so.
func TestAddPartitionsConcurrent(t *testing.T) {
	ctx := testContext(t)
	s := newTestStore(t, objstore.NewMem())
	tp, err := s.CreateTopic(ctx, "t", 1, assign(1, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 6)
	for i := range results {
		wg.Go(func() {
			total := int32(2 + i)
			_, results[i] = s.AddPartitions(ctx, "t", total, assign(int(total-1), int32(i)))
		})
	}
	wg.Wait()
	got, err := s.Topic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	wins := 0
	for i, err := range results {
		if err == nil {
			wins++
		}
		if err != nil && !errors.Is(err, ErrInvalidPartitions) && !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Errorf("grower %d: unexpected error %v", i, err)
		}
	}
	if wins == 0 || got.Partitions < 2 {
		t.Fatalf("no grower won (%d wins, %d partitions)", wins, got.Partitions)
	}
	for p := range got.Partitions {
		if _, _, err := s.PartitionState(ctx, tp.ID, p); err != nil {
			t.Errorf("partition %d of %d: %v", p, got.Partitions, err)
		}
	}
	t.Logf("%d growers won; final partitions %d", wins, got.Partitions)
}
