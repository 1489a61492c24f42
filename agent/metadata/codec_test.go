package metadata

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestTopicIDFormat(t *testing.T) {
	id := [16]byte{0xde, 0xad, 0xbe, 0xef, 15: 0x01}
	s := FormatTopicID(id)
	if s != "deadbeef000000000000000000000001" {
		t.Fatalf("FormatTopicID = %s", s)
	}
	back, err := ParseTopicID(s)
	if err != nil || back != id {
		t.Fatalf("ParseTopicID(%s) = %x, %v", s, back, err)
	}
	for _, bad := range []string{"", "00000000000000000000000000000000", strings.ToUpper(s), s[:31], s + "0", "zz" + s[2:],
		"deadbeef-0000-0000-0000-000000000001"} {
		if _, err := ParseTopicID(bad); err == nil {
			t.Errorf("ParseTopicID(%q) succeeded", bad)
		}
	}
	for range 100 {
		id, err := newTopicID()
		if err != nil || id == ([16]byte{}) || id == ([16]byte{15: 1}) {
			t.Fatalf("newTopicID = %x, %v", id, err)
		}
	}
}

func TestDecodeObjectVersions(t *testing.T) {
	var obj producerIDsObject
	cases := []struct {
		data string
		want error
	}{
		{`{"version":1,"next_producer_id":7}`, nil},
		{`{"version":1,"next_producer_id":7,"added_later":true}`, nil},
		{`{"version":2,"next_producer_id":"changed type"}`, ErrUnsupportedVersion},
		{`{"next_producer_id":7}`, ErrCorrupt},
		{`{"version":-1}`, ErrCorrupt},
		{`{"version":1,"next_producer_id":"x"}`, ErrCorrupt},
		{`[]`, ErrCorrupt},
		{``, ErrCorrupt},
	}
	for _, c := range cases {
		err := decodeObject("k", []byte(c.data), 1024, &obj)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("decode %s = %v, want %v", c.data, err, c.want)
		}
	}
	if err := decodeObject("k", make([]byte, 2000), 1024, &obj); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized object: %v", err)
	}
}

// FuzzReadObjects feeds arbitrary bytes to every reader as each kind of
// object. None may panic, and whatever they accept must keep its invariants.
func FuzzReadObjects(f *testing.F) {
	for _, seed := range []string{
		`{"version":1,"name":"t","topic_id":"00000000000000000000000000000abc","partitions":2,"configs":{"retention.ms":"1"},"created_at":"2024-01-01T00:00:00Z"}`,
		`{"version":1,"leader":1,"leader_epoch":3,"replicas":[1,2],"isr":[1],"state_epoch":4}`,
		`{"version":1,"leader":1,"replicas":[1,1],"isr":[1,7]}`,
		`{"version":1,"name":"t","topic_id":"00000000000000000000000000000000"}`,
		`{"version":1,"cluster_id":"abc","format_version":1,"created_at":"2024-01-01T00:00:00Z"}`,
		`{"version":1,"next_producer_id":-5}`,
		`{"version":1,"id":3,"kafka_addr":"h:1"}`,
		`{"version":1,"partitions":-1}`,
		`{"version":99}`,
		`{"version":1e400}`,
		`{`,
		``,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	id := [16]byte{15: 0xbc, 14: 0x0a}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := objstore.NewMem()
		s := New(b, nil)
		put := func(key string, data []byte) {
			if _, err := b.Put(ctx, key, data, objstore.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		put(nameKey("t"), encodeObject(nameObject{Version: 1, Name: "t", TopicID: FormatTopicID(id)}))
		put(topicKey(id), data)
		put(stateKey(id, 0), data)
		put(agentKey(3), data)
		put(producerIDsKey, data)
		put(clusterKey, data)
		put(nameKey("u"), data)

		if tp, err := s.Topic(ctx, "t"); err == nil {
			if tp.Partitions < 1 || tp.Partitions > s.settings.MaxPartitions || tp.Configs == nil || tp.ID != id {
				t.Fatalf("accepted a bad topic: %+v", tp)
			}
		}
		if st, _, err := s.PartitionState(ctx, id, 0); err == nil {
			if err := st.Validate(s.settings.MaxReplicas); err != nil {
				t.Fatalf("accepted a bad state %+v: %v", st, err)
			}
		}
		if first, err := s.ReserveProducerIDs(ctx, 1); err == nil && first < 0 {
			t.Fatalf("negative producer id %d", first)
		}
		if id, err := s.InitCluster(ctx); err == nil && id == "" {
			t.Fatal("empty cluster id accepted")
		}
		_, _ = s.Agent(ctx, 3)
		_, _ = s.Topic(ctx, "u")
		_, _ = s.Topics(ctx)
	})
}
