package agent

// Consumer-group behaviour as Apache Kafka shows it to real clients: commits
// while the group prepares a rebalance, groups kept Empty after their last
// member leaves, and __consumer_offsets in Metadata and KIP-848 regexes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// waitUntil polls cond until it returns "" (ready) or the deadline passes,
// and fails with the last reason it gave.
func waitUntil(t *testing.T, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func groupState(adm *kadm.Client, groupID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return err.Error()
	}
	return described[groupID].State
}

// TestCommitWhilePreparingRebalance: a franz-go member that holds up a
// rebalance (BlockRebalanceOnPoll, as while it finishes processing) commits
// what it processed while the group is PreparingRebalance. Kafka accepts
// that commit from a member of the current generation; it must not be
// REBALANCE_IN_PROGRESS.
func TestCommitWhilePreparingRebalance(t *testing.T) {
	a := start(t, groupTestConfig(t), nil)
	cl := a.client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "work", 2, nil)
	const records = 20
	for i := range records {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "work", Partition: int32(i % 2), Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	first, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()), kgo.ConsumerGroup("slow"), kgo.ConsumeTopics("work"),
		kgo.BlockRebalanceOnPoll(), kgo.DisableAutoCommit(), kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(50*time.Millisecond), kgo.RebalanceTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	got := 0
	waitUntil(t, 30*time.Second, func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got += first.PollFetches(ctx).NumRecords()
		if got < records {
			first.AllowRebalance()
			return fmt.Sprintf("%d of %d records", got, records)
		}
		return ""
	})
	// The first member holds the rebalance a second member starts.
	groupConsumer(t, a, "slow", "work")
	waitUntil(t, 15*time.Second, func() string {
		if s := groupState(adm, "slow"); s != "PreparingRebalance" {
			return "group " + s
		}
		return ""
	})
	if err := first.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Errorf("commit while the group is PreparingRebalance: %v", err)
	}
	first.AllowRebalance()
	fetched, err := adm.FetchOffsets(ctxT(t), "slow")
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	fetched.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != records {
		t.Errorf("committed offsets add up to %d, want %d", total, records)
	}
}

// TestEmptyGroupKeptAfterLastMemberLeaves: a group whose members all left,
// without ever committing, is Empty, not Dead, in DescribeGroups and
// ListGroups, and DeleteGroups deletes it without error, as in Kafka;
// classic and KIP-848 groups alike.
func TestEmptyGroupKeptAfterLastMemberLeaves(t *testing.T) {
	a := start(t, groupTestConfig(t), nil)
	cl := a.client(t, kgo.MaxVersions(kversion.Stable()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "quiet", 2, nil)
	for _, run := range []struct {
		name, groupType string
		opts            []kgo.Opt
	}{
		{"classic", "classic", nil},
		{"kip848", "consumer", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(run.name, func(t *testing.T) {
			groupID := "left-" + run.name
			_, stop := stoppableConsumer(t, a, groupID, "quiet", append(run.opts, kgo.DisableAutoCommit())...)
			waitUntil(t, 30*time.Second, func() string {
				if s := groupState(adm, groupID); s != "Stable" {
					return "group " + s
				}
				return ""
			})
			stop() // leaves the group
			waitUntil(t, 15*time.Second, func() string {
				if s := groupState(adm, groupID); s != "Empty" {
					return "group " + s + ", want Empty"
				}
				return ""
			})
			listed, err := adm.ListGroups(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if g, ok := listed[groupID]; !ok || g.State != "Empty" || g.ProtocolType != "consumer" || g.GroupType != run.groupType {
				t.Errorf("ListGroups: %+v (listed %v), want Empty %s group of protocol type consumer", g, ok, run.groupType)
			}
			deleted, err := adm.DeleteGroups(ctxT(t), groupID)
			if err != nil {
				t.Fatal(err)
			}
			if err := deleted[groupID].Err; err != nil {
				t.Errorf("DeleteGroups of the Empty group: %v", err)
			}
			if s := groupState(adm, groupID); s != "Dead" {
				t.Errorf("after DeleteGroups: %s, want Dead", s)
			}
			deleted, err = adm.DeleteGroups(ctxT(t), groupID)
			if err != nil {
				t.Fatal(err)
			}
			if err := deleted[groupID].Err; !errors.Is(err, kerr.GroupIDNotFound) {
				t.Errorf("DeleteGroups again: %v, want GROUP_ID_NOT_FOUND", err)
			}
		})
	}
}

// TestInternalTopicInMetadataAndRegex: Metadata for all topics lists
// __consumer_offsets marked internal, as Kafka does (kadm's ListTopics
// still filters it), and a KIP-848 consumer whose regex names it is
// assigned its partitions: the broker-side regex matches internal topics.
func TestInternalTopicInMetadataAndRegex(t *testing.T) {
	a := start(t, groupTestConfig(t), nil)
	cl := a.client(t, kgo.MaxVersions(kversion.Stable()))
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "plain", 1, nil)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "plain", Partition: 0, At: 1, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctxT(t), "creates-the-topic", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	md, err := adm.Metadata(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := md.Topics[offsetsTopic]; !ok || !d.IsInternal || len(d.Partitions) != 3 {
		t.Errorf("Metadata of all topics: %s listed %v, internal %v, %d partitions; want listed, internal, 3", offsetsTopic, ok, d.IsInternal, len(d.Partitions))
	}
	listed, err := adm.ListTopics(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if names := listed.Names(); !slices.Equal(names, []string{"plain"}) {
		t.Errorf("kadm ListTopics: %v, want [plain]", names)
	}

	const groupID = "reads-offsets"
	// franz-go joins once its own match of the regexes, which skips
	// internal topics, finds a topic ("plain"); it then sends the regexes
	// for the broker to resolve, which Kafka does over every topic. (The
	// regexes replace the helper's topic.)
	groupConsumer(t, a, groupID, "plain", kgo.ConsumeRegex(), kgo.ConsumeTopics("^__consumer_offsets$", "^pla.*"),
		kgo.DisableAutoCommit(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
	waitUntil(t, 30*time.Second, func() string {
		described, err := adm.DescribeConsumerGroups(ctxT(t), groupID)
		if err != nil {
			return err.Error()
		}
		g := described[groupID]
		if g.Err != nil {
			return g.Err.Error()
		}
		var assigned []string
		n := 0
		for _, m := range g.Members {
			for topic, ps := range m.Assignment {
				assigned = append(assigned, fmt.Sprintf("%s:%d", topic, len(ps)))
				if topic == offsetsTopic {
					n += len(ps)
				}
			}
		}
		if n != 3 || len(assigned) != 2 {
			return fmt.Sprintf("state %s, assigned %s", g.State, strings.Join(assigned, ","))
		}
		return ""
	})
}
