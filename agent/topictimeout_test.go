package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/vfs"

	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/testwait"
)

// TestTopicChangesAnswerWithinTheirTimeout: a CreateTopics, DeleteTopics
// or CreatePartitions whose change outlasts timeout_ms (here because every fsync is held) is
// answered REQUEST_TIMED_OUT by then, and the change completes afterwards,
// as in Kafka. An agent that answered only once done was cut off by
// franz-go at timeout_ms plus its RequestTimeoutOverhead, and the client's
// retry of the request reported the first attempt's own effect: the
// benchmark harness got UNKNOWN_TOPIC_OR_PARTITION when deleting a topic
// of 1,000 partitions, whose logs took longer than that to close.
func TestTopicChangesAnswerWithinTheirTimeout(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.NewFaulty(vfs.Default)
	a := start(t, testConfig(dir), fs)
	// kadm as the harness uses it, with a shorter margin past timeout_ms
	// and Metadata not answered from the client's cache.
	adm := kadm.NewClient(a.client(t, kgo.RequestTimeoutOverhead(time.Second), kgo.MetadataMinAge(10*time.Millisecond)))
	adm.SetTimeoutMillis(300)

	// hold holds every fsync until release, and for at most heldFor, so
	// that an agent that answers only when the change is done fails the
	// test instead of hanging it.
	const heldFor = 5 * time.Second
	hold := func() (release func()) {
		held := fs.HoldSyncs()
		timer := time.AfterFunc(heldFor, held)
		return func() { timer.Stop(); held() }
	}
	partitions := func() int {
		md, err := adm.Metadata(ctxT(t), "slow")
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		if td := md.Topics["slow"]; td.Err == nil {
			return len(td.Partitions)
		}
		return 0
	}

	createTopic(t, a.client(t), "slow", 4, nil)
	release := hold()
	began := time.Now()
	dr, err := adm.DeleteTopic(ctxT(t), "slow")
	took := time.Since(began)
	release()
	if err == nil {
		err = dr.Err
	}
	if !errors.Is(err, kerr.RequestTimedOut) || took >= heldFor {
		t.Fatalf("delete with fsyncs held: %v after %v; want REQUEST_TIMED_OUT before the fsyncs are released (%v)", err, took.Round(time.Millisecond), heldFor)
	}
	testwait.Until(t, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dir, "log", partition.DirName("slow", 3)))
		return errors.Is(err, os.ErrNotExist)
	}, "the deleted topic's logs removed")
	if n := partitions(); n != 0 {
		t.Fatalf("deleted topic in Metadata with %d partitions", n)
	}

	release = hold()
	began = time.Now()
	cr, err := adm.CreateTopic(ctxT(t), 4, 1, nil, "slow")
	took = time.Since(began)
	release()
	if err == nil {
		err = cr.Err
	}
	if !errors.Is(err, kerr.RequestTimedOut) || took >= heldFor {
		t.Fatalf("create with fsyncs held: %v after %v; want REQUEST_TIMED_OUT before the fsyncs are released (%v)", err, took.Round(time.Millisecond), heldFor)
	}
	testwait.Until(t, 10*time.Second, func() bool { return partitions() == 4 }, "the created topic in Metadata")

	release = hold()
	began = time.Now()
	pr, err := adm.CreatePartitions(ctxT(t), 4, "slow")
	took = time.Since(began)
	release()
	if err == nil {
		err = pr["slow"].Err
	}
	if !errors.Is(err, kerr.RequestTimedOut) || took >= heldFor {
		t.Fatalf("create partitions with fsyncs held: %v after %v; want REQUEST_TIMED_OUT before the fsyncs are released (%v)", err, took.Round(time.Millisecond), heldFor)
	}
	testwait.Until(t, 10*time.Second, func() bool { return partitions() == 8 }, "the added partitions in Metadata")
}
