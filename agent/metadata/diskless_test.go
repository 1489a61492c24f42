package metadata

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestCheckDiskless(t *testing.T) {
	on := func(kv ...string) map[string]string {
		m := map[string]string{DisklessEnable: "true"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		topic   map[string]string
		agent   Defaults
		mention []string // in the error; none: no error
	}{
		{"classic compacted topic", map[string]string{CleanupPolicy: "compact"}, nil, nil},
		{"diskless", on(), nil, nil},
		{"diskless with its own retention", on(RetentionMs, "1000", RemoteStorageEnable, "true"), nil, nil},
		{"compact", on(CleanupPolicy, "compact"), nil,
			[]string{"diskless.enable=true cannot be combined with cleanup.policy=compact: compacted diskless topics are not supported"}},
		{"compact and delete", on(CleanupPolicy, "delete,compact"), nil, []string{"cleanup.policy=delete,compact", "not supported"}},
		{"compact and tiered", on(CleanupPolicy, "compact", RemoteStorageEnable, "true"), nil, []string{"cleanup.policy=compact"}},
		{"untiered", on(RemoteStorageEnable, "false"), nil, []string{"diskless.enable=true cannot be combined with remote.storage.enable=false"}},
		{"local retention time", on(LocalRetentionMs, "60000"), nil, []string{"diskless.enable=true", "local.retention.ms=60000", "no local log"}},
		{"local retention bytes", on(LocalRetentionBytes, "-2"), nil, []string{"diskless.enable=true", "local.retention.bytes=-2", "no local log"}},
		{"agent retention does not count", on(), Defaults{RetentionMs: "1000"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Resolve(c.topic, c.agent)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckDiskless(c.topic, r)
			if len(c.mention) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err %q does not say %q", err, m)
				}
			}
		})
	}
}

func TestCheckDisklessUnchanged(t *testing.T) {
	on := map[string]string{DisklessEnable: "true", RetentionMs: "1"}
	off := map[string]string{DisklessEnable: "false"}
	none := map[string]string{RetentionMs: "1"}
	cases := []struct {
		name         string
		stored, next map[string]string
		was          string // in the error; "": no error
	}{
		{"diskless kept", on, map[string]string{DisklessEnable: "true"}, ""},
		{"classic kept", none, map[string]string{RetentionMs: "2"}, ""},
		{"classic set to its value", none, off, ""},
		{"explicit false deleted", off, none, ""},
		{"classic turned diskless", none, on, "diskless.enable=false"},
		{"diskless turned off", on, off, "diskless.enable=true"},
		{"diskless deleted or left out", on, none, "diskless.enable=true"},
	}
	for _, c := range cases {
		err := CheckDisklessUnchanged("t", c.stored, c.next)
		switch {
		case c.was == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.was == "":
		case !errors.Is(err, ErrInvalidConfig):
			t.Errorf("%s: err = %v, want ErrInvalidConfig", c.name, err)
		case !strings.Contains(err.Error(), "diskless.enable cannot be changed after creation (topic t has "+c.was+"); create a new topic and copy the records"):
			t.Errorf("%s: err = %q", c.name, err)
		}
	}
}

// TestDisklessTopicHasNoStates: a diskless topic is its topic.json and
// name only, through create, load, growth and delete; it takes no replica
// assignment and cannot change mode.
func TestDisklessTopicHasNoStates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		configs := map[string]string{DisklessEnable: "true"}

		if _, err := s.CreateTopic(ctx, "dl", 2, assign(2, 0), configs); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Fatalf("diskless create with an assignment: %v, want ErrInvalidReplicaAssignment", err)
		}
		if _, err := s.CreateTopic(ctx, "classic", 2, nil, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Fatalf("classic create without an assignment: %v, want ErrInvalidReplicaAssignment", err)
		}
		created, err := s.CreateTopic(ctx, "dl", 2, nil, configs)
		if err != nil {
			t.Fatal(err)
		}
		if !created.Diskless() {
			t.Fatalf("created topic %+v is not diskless", created)
		}
		onlyTopicJSON := func(when string) {
			t.Helper()
			if keys := keysUnder(t, b, topicPrefix(created.ID)); !slices.Equal(keys, []string{topicKey(created.ID)}) {
				t.Fatalf("%s: objects %v, want topic.json only", when, keys)
			}
		}
		onlyTopicJSON("after create")

		got, err := s.Topic(ctx, "dl")
		if err != nil || got.ID != created.ID || got.Partitions != 2 || !got.Diskless() {
			t.Fatalf("Topic = %+v, %v", got, err)
		}
		all, err := s.Topics(ctx)
		if err != nil || len(all) != 1 || all[0].Name != "dl" {
			t.Fatalf("Topics = %+v, %v", all, err)
		}
		if _, _, err := s.PartitionState(ctx, created.ID, 0); !errors.Is(err, ErrUnknownPartition) {
			t.Fatalf("PartitionState of a diskless partition: %v, want ErrUnknownPartition", err)
		}

		if _, err := s.AddPartitions(ctx, "dl", 4, assign(2, 0)); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Fatalf("diskless growth with an assignment: %v, want ErrInvalidReplicaAssignment", err)
		}
		grown, err := s.AddPartitions(ctx, "dl", 4, nil)
		if err != nil || grown.Partitions != 4 {
			t.Fatalf("AddPartitions = %+v, %v", grown, err)
		}
		onlyTopicJSON("after growth")

		for name, change := range map[string]func(map[string]string){
			"turn off": func(c map[string]string) { c[DisklessEnable] = "false" },
			"delete":   func(c map[string]string) { delete(c, DisklessEnable) },
		} {
			_, err := s.UpdateTopic(ctx, "dl", func(m *Topic) error { change(m.Configs); return nil })
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "cannot be changed after creation") {
				t.Fatalf("%s diskless.enable: %v, want ErrInvalidConfig", name, err)
			}
		}
		if _, err := s.UpdateTopic(ctx, "dl", func(m *Topic) error { m.Configs[RetentionMs] = "1000"; return nil }); err != nil {
			t.Fatalf("another config of a diskless topic: %v", err)
		}

		classic, err := s.CreateTopic(ctx, "classic", 1, assign(1, 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.UpdateTopic(ctx, "classic", func(m *Topic) error { m.Configs[DisklessEnable] = "true"; return nil })
		if !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("classic topic turned diskless: %v, want ErrInvalidConfig", err)
		}
		if got, err := s.Topic(ctx, "classic"); err != nil || got.Diskless() {
			t.Fatalf("classic topic after a refused change: %+v, %v", got, err)
		}
		if _, _, err := s.PartitionState(ctx, classic.ID, 0); err != nil {
			t.Fatalf("classic topic's state: %v", err)
		}

		if err := s.DeleteTopic(ctx, "dl"); err != nil {
			t.Fatal(err)
		}
		if keys := keysUnder(t, b, topicPrefix(created.ID)); len(keys) != 0 {
			t.Fatalf("objects left after delete: %v", keys)
		}
		if _, err := s.Topic(ctx, "dl"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("Topic after delete: %v, want ErrUnknownTopic", err)
		}
	})
}
