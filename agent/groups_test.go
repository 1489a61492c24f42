package agent

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestCommittedOffsetsSurviveRestart: offsets committed with kadm (as a
// consumer that assigns its own partitions commits them) are read back,
// also after a restart, and deleting them works; __consumer_offsets is
// listed as internal and refuses client produces.
func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.OffsetsTopicPartitions = 5
	a := start(t, cfg, nil)
	cl := a.client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "orders", 3, nil)
	ctx := ctxT(t)

	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 10, LeaderEpoch: 0, Metadata: "m0"})
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 2, At: 42, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, "billing", offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	var bad kadm.Offsets
	bad.Add(kadm.Offset{Topic: "no-such-topic", Partition: 0, At: 1})
	resp, err = adm.CommitOffsets(ctx, "billing", bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Error(); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("commit to an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}

	check := func(adm *kadm.Client, want map[int32]int64) {
		t.Helper()
		got, err := adm.FetchOffsets(ctxT(t), "billing")
		if err == nil {
			err = got.Error()
		}
		if err != nil {
			t.Fatalf("fetch offsets: %v", err)
		}
		n := 0
		got.Each(func(o kadm.OffsetResponse) {
			n++
			if want[o.Partition] != o.At || o.Topic != "orders" {
				t.Errorf("fetched %s-%d at %d, want %d", o.Topic, o.Partition, o.At, want[o.Partition])
			}
		})
		if n != len(want) {
			t.Errorf("fetched %d offsets, want %d", n, len(want))
		}
	}
	check(adm, map[int32]int64{0: 10, 2: 42})

	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := md.Topics[offsetsTopic]; !ok || !d.IsInternal {
		t.Errorf("%s in Metadata of all topics: listed %v, internal %v; want listed as internal, as Kafka does", offsetsTopic, ok, d.IsInternal)
	}
	if code, _ := produceRaw(t, cl, offsetsTopic, 0, "x"); code != kerr.InvalidTopicException.Code {
		t.Errorf("client produce to %s: code %d, want INVALID_TOPIC_EXCEPTION", offsetsTopic, code)
	}
	cl.Close()
	a.stop(t)

	b := start(t, cfg, nil)
	adm = kadm.NewClient(b.client(t))
	check(adm, map[int32]int64{0: 10, 2: 42})
	// The group is rebuilt from its offsets: Empty, listed, as in Kafka.
	if s := groupState(adm, "billing"); s != "Empty" {
		t.Errorf("group after the restart: %s, want Empty", s)
	}
	if listed, err := adm.ListGroups(ctxT(t)); err != nil || listed["billing"].State != "Empty" {
		t.Errorf("ListGroups after the restart: %+v, %v; want billing Empty", listed, err)
	}
	dr, err := adm.DeleteOffsets(ctxT(t), "billing", kadm.TopicsSet{"orders": {0: {}}})
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete offsets: %v", err)
	}
	check(adm, map[int32]int64{2: 42})
	groups, err := adm.DeleteGroups(ctxT(t), "billing", "never-seen")
	if err != nil {
		t.Fatal(err)
	}
	if err := groups["billing"].Err; err != nil {
		t.Errorf("delete group billing: %v", err)
	}
	if err := groups["never-seen"].Err; !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}
	check(adm, map[int32]int64{})
}

// TestCommitWithGenerationIsRefused: a commit that names a generation of a
// group that does not exist is ILLEGAL_GENERATION, or GROUP_ID_NOT_FOUND
// from OffsetCommit v9 on.
func TestCommitWithGenerationIsRefused(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.OffsetsTopicPartitions = 1
	a := start(t, cfg, nil)
	cl := a.client(t)
	createTopic(t, cl, "t", 1, nil)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = "g", 3, "member-1"
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Errorf("commit at generation 3 of a group without members: code %d, want ILLEGAL_GENERATION", code)
	}
	// From OffsetCommit v9 on, Kafka answers GROUP_ID_NOT_FOUND instead.
	resp, err = req.RequestWith(ctxT(t), a.client(t, kgo.MaxVersions(kversion.Stable())))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; resp.Version < 9 || code != kerr.GroupIDNotFound.Code {
		t.Errorf("commit v%d at generation 3 of a group that does not exist: code %d, want GROUP_ID_NOT_FOUND at v9", resp.Version, code)
	}
}
