package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestTieredCompaction (issue 22, tiered compaction): the keyed workload of
// TestCompactedTopicKeepsLatestValues on a compacted topic tiered to MinIO
// with a small local disk. Everything is uploaded with the cleaner off,
// then the agent restarts with it on: the leader compacts the bucket, and a
// full read, served from the bucket but for the last segments, returns
// exactly the latest value of every live key, no deleted key, offsets
// strictly increasing; the bucket holds fewer objects and bytes; and after
// --remote-compaction-grace `strata verify` finds no orphan.
func TestTieredCompaction(t *testing.T) {
	keys, updates := compactWorkloadSize()
	if os.Getenv("STRATA_COMPACT_FULL") == "" {
		updates /= 2 // every byte also goes to MinIO; the full run is the size
	}
	minio := miniotest.Start(t)
	for _, kv := range minio.Env() { // for this process's own look at the bucket
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	store := minio.StoreURL(minio.NewBucket(t), "strata")
	args := append(slices.Clone(tieringAgentArgs), cleanerArgs...)
	args = append(args, "--store", store, "--remote-compaction-grace=2s", "--log-cleaner-enable=false")
	a := testagent.Start(t, testagent.Options{ExtraArgs: args, Env: minio.Env()})
	const topic = "tiered-compacted"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"remote.storage.enable":     kadm.StringPtr("true"),
		"segment.bytes":             kadm.StringPtr("16384"),
		"local.retention.bytes":     kadm.StringPtr("32768"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr("1000"),
	})
	wantConfig(t, newAdmin(t, a.Addr()), topic, "remote.storage.enable", "true", kmsg.ConfigSourceDynamicTopicConfig)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	want := map[string][]byte{}
	cl := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(8192),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // so that the filler below takes the room it says
	var mu sync.Mutex
	var produceErr error
	produce := func(k string, v []byte) {
		want[k] = v
		cl.Produce(ctxT(t, opTimeout), &kgo.Record{Key: []byte(k), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				produceErr = errors.Join(produceErr, err)
				mu.Unlock()
			}
		})
	}
	flush := func() {
		t.Helper()
		if err := cl.Flush(ctxT(t, 2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if produceErr != nil {
			t.Fatalf("produce: %v", produceErr)
		}
	}
	for i := range updates {
		k := "key-" + strconv.Itoa(rng.IntN(keys))
		var v []byte
		if rng.IntN(100) != 0 {
			v = fmt.Appendf(nil, "%s=%d", k, i)
		}
		produce(k, v)
	}
	flush()
	// Past delete.retention.ms, keys written once fill the last segments
	// (about 80 KB, five segments): the manifest's last entry, never
	// compacted, and the local tail, which a remote pass's map does not
	// cover (docs/design.md §7), then hold none of the workload, so every
	// update and tombstone of it is in the compacted run.
	time.Sleep(1200 * time.Millisecond)
	for i := range 1000 {
		produce(fmt.Sprintf("filler-%05d", i), fmt.Appendf(nil, "filler value %040d", i))
	}
	flush()
	waitUploadsDone(t, a.HTTPAddr(), topic, 1)
	// The segment holding the workload's last updates holds the first
	// fillers too, and a pass drops tombstones only from segments whose
	// newest record is past delete.retention.ms.
	time.Sleep(1200 * time.Millisecond)

	b, err := objstore.Open(ctxT(t, opTimeout), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	objects := func() (n int, bytes int64) {
		t.Helper()
		err := b.List(ctxT(t, opTimeout), "topics/", func(_ string, attrs objstore.Attributes) error {
			n++
			bytes += attrs.Size
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, bytes
	}
	objectsBefore, bytesBefore := objects()
	repBefore, err := tiering.Verify(ctxT(t, opTimeout), b, true)
	if err != nil || len(repBefore.Problems) > 0 {
		t.Fatalf("bucket before compaction: %+v, %v", repBefore, err)
	}

	a.AddArgs("--log-cleaner-enable=true")
	a.Restart(t)
	waitFor(t, "a remote compaction pass", func() string {
		if v := metricValue(t, a.HTTPAddr(), "strata_tiering_compaction_runs_total", "topic", topic); v < 1 {
			return fmt.Sprintf("strata_tiering_compaction_runs_total %v", v)
		}
		return ""
	})

	live := 0
	for _, v := range want {
		if v != nil {
			live++
		}
	}
	check := func(when string) { t.Helper(); checkLatestValues(t, a.Addr(), topic, want, when) }
	check("after remote compaction")
	st := tieringStatus(t, a.HTTPAddr(), topic)
	t.Logf("read served from the bucket for offsets [%d, %d), locally from %d", st.RemoteStart, st.RemoteNext, st.LocalStart)
	if st.LocalStart*2 < st.RemoteNext {
		t.Fatalf("the local log starts at %d: most of the read did not come from the bucket (%+v)", st.LocalStart, st)
	}

	// After the grace the janitor deletes the replaced objects: strata
	// verify, as an operator runs it, finds nothing amiss and no orphan.
	waitFor(t, "the janitor to delete the replaced objects", func() string {
		rep, err := tiering.Verify(ctxT(t, opTimeout), b, false)
		if err != nil || rep.Retired > 0 || len(rep.Orphans) > 0 {
			return fmt.Sprintf("%d retired, %d orphans, %v", rep.Retired, len(rep.Orphans), err)
		}
		return ""
	})
	cmd := exec.Command(testagent.Build(t), "verify", "--store", store)
	cmd.Env = append(cmd.Environ(), minio.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "problems 0, orphans 0, retired 0") {
		t.Fatalf("strata verify: %v\n%s", err, out)
	}
	objectsAfter, bytesAfter := objects()
	check("after the grace")

	for _, line := range strings.Split(a.Logs(), "\n") {
		if strings.Contains(line, "remote compaction") {
			t.Logf("agent: %s", line)
		}
	}
	puts := metricValue(t, a.HTTPAddr(), "strata_store_topic_requests_total", "topic", topic, "op", "PUT")
	gets := metricValue(t, a.HTTPAddr(), "strata_store_topic_requests_total", "topic", topic, "op", "GET")
	read := metricValue(t, a.HTTPAddr(), "strata_tiering_compaction_read_bytes_total", "topic", topic)
	t.Logf("%d updates of %d keys (%d live): bucket objects %d -> %d, bytes %d -> %d, manifest segments %d -> %d; "+
		"compaction read %.0f bytes; since the restart the topic made %.0f PUTs and %.0f GETs; verify: %s",
		updates, keys, live, objectsBefore, objectsAfter, bytesBefore, bytesAfter, repBefore.Segments, st.RemoteSegments,
		read, puts, gets, strings.TrimSpace(string(out)))
	if objectsAfter >= objectsBefore || bytesAfter*2 > bytesBefore {
		t.Fatalf("the bucket did not shrink: %d objects, %d bytes before; %d, %d after", objectsBefore, bytesBefore, objectsAfter, bytesAfter)
	}
	if read > float64(repBefore.Bytes) {
		t.Fatalf("compaction read %v bytes of a bucket of %d: each byte at most once per pass", read, repBefore.Bytes)
	}
}

// tieringStatus is the agent's /v1/tiering entry for partition 0 of topic.
func tieringStatus(t *testing.T, httpAddr, topic string) tiering.Status {
	t.Helper()
	var st struct{ Partitions []tiering.Status }
	resp, err := http.Get("http://" + httpAddr + "/v1/tiering")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Partitions {
		if s.Topic == topic && s.Partition == 0 {
			return s
		}
	}
	t.Fatalf("no tiering status for %s-0: %+v", topic, st.Partitions)
	return tiering.Status{}
}
