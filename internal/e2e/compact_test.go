package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/testagent"
)

// The keyed workload is 10,000 keys and 1,000,000 updates;
// STRATA_COMPACT_FULL=1 runs that size (minutes), the default is scaled
// to stay well under a minute on a loaded machine.
func compactWorkloadSize() (keys, updates int) {
	if os.Getenv("STRATA_COMPACT_FULL") != "" {
		return 10_000, 1_000_000
	}
	return 1_000, 40_000
}

// cleanerArgs make the cleaner look often (the tests wait on conditions,
// never on these times), and turn off preallocation so that file sizes on
// disk are the data's.
var cleanerArgs = []string{"--log-cleaner-backoff=100ms", "--log-cleaner-dedupe-buffer-size=16777216", "--log-preallocate=false"}

// partitionLogBytes sums the .log files of one partition's directory.
func partitionLogBytes(t *testing.T, a *testagent.Agent, topic string, partition int) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(a.DataDir(), "log", topic+"-"+strconv.Itoa(partition), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// checkLatestValues reads topic back from the start and fails unless it
// holds exactly the latest value of every live key of want (nil: deleted),
// each read once, and no deleted key.
func checkLatestValues(t *testing.T, addr, topic string, want map[string][]byte, when string) {
	t.Helper()
	live := 0
	for _, v := range want {
		if v != nil {
			live++
		}
	}
	got, seen := readCompacted(t, addr, topic)
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == nil && ok:
			t.Fatalf("%s: deleted key %s read back (value %q) after delete.retention.ms", when, k, g)
		case v != nil && string(g) != string(v):
			t.Fatalf("%s: key %s: read %q, want latest %q", when, k, g, v)
		case v != nil && seen[k] != 1:
			t.Fatalf("%s: key %s read %d times, want once after compaction", when, k, seen[k])
		}
	}
	if len(got) != live {
		t.Fatalf("%s: read %d keys, want the %d live ones", when, len(got), live)
	}
}

// readCompacted consumes a partition from the start to its end offset and
// returns the last value of each key, failing on offsets that do not
// strictly increase; seen counts records per key. The tests end the
// partition with a record in the active segment, which the cleaner never
// touches, so the end offset is a record's.
func readCompacted(t *testing.T, addr, topic string) (latest map[string][]byte, seen map[string]int) {
	t.Helper()
	adm := newAdmin(t, addr)
	ends, err := adm.ListEndOffsets(ctxT(t, opTimeout), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(4<<20))
	latest, seen = map[string][]byte{}, map[string]int{}
	last := int64(-1)
	ctx := ctxT(t, 2*time.Minute)
	for last < end.Offset-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: stopped at offset %d of %d", topic, last, end.Offset)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d: offsets must strictly increase", r.Offset, last)
			}
			last = r.Offset
			latest[string(r.Key)] = r.Value
			seen[string(r.Key)]++
		})
	}
	return latest, seen
}

// TestCompactedTopicKeepsLatestValues (issue 22): a keyed workload with 1%
// tombstones on a compacted topic, through a real agent and franz-go. The
// disk is measured with the cleaner off, then the agent restarts with it
// on: a full read then returns exactly the latest value of each live key,
// no deleted key once delete.retention.ms passed, offsets strictly
// increasing, and the partition's disk is O(live keys).
func TestCompactedTopicKeepsLatestValues(t *testing.T) {
	keys, updates := compactWorkloadSize()
	a := testagent.Start(t, testagent.Options{ExtraArgs: append([]string{"--log-cleaner-enable=false"}, cleanerArgs...)})
	const topic = "compacted"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("262144"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr("1000"),
		"segment.ms":                kadm.StringPtr("500"),
	})

	// DescribeConfigs shows the compaction settings with Kafka's defaults,
	// and that a compacted topic is not tiered.
	adm := newAdmin(t, a.Addr())
	wantConfig(t, adm, topic, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, adm, topic, "delete.retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, adm, topic, "min.compaction.lag.ms", "0", notDynamic)
	wantConfig(t, adm, topic, "max.compaction.lag.ms", "9223372036854775807", notDynamic)
	wantConfig(t, adm, topic, "remote.storage.enable", "false", notDynamic)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	want := map[string][]byte{}
	cl := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(64<<10)) // under segment.bytes
	// As Kafka, a compacted topic refuses a record without a key.
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	var mu sync.Mutex
	var produceErr error
	start := time.Now()
	for i := range updates {
		k := "key-" + strconv.Itoa(rng.IntN(keys))
		var v []byte
		if rng.IntN(100) != 0 {
			v = []byte(fmt.Sprintf("%s=%d", k, i))
		}
		want[k] = v
		cl.Produce(ctxT(t, opTimeout), &kgo.Record{Key: []byte(k), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				produceErr = errors.Join(produceErr, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctxT(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	t.Logf("produced %d updates of %d keys in %v", updates, keys, time.Since(start).Round(time.Millisecond))

	// Past delete.retention.ms and segment.ms, a last record (timestamp
	// now) rolls the segment holding the workload, so that all of it is
	// sealed and cleanable.
	time.Sleep(1200 * time.Millisecond)
	want["roll"] = []byte("roll")
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Key: []byte("roll"), Value: []byte("roll")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := partitionLogBytes(t, a, topic, 0)

	a.AddArgs("--log-cleaner-enable=true")
	a.Restart(t)
	live := 0
	for _, v := range want {
		if v != nil {
			live++
		}
	}
	deadline := time.Now().Add(conditionLimit)
	for metricValue(t, a.HTTPAddr(), "strata_log_cleaner_runs_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the cleaner did not run:\n%s", a.Logs())
		}
		time.Sleep(conditionPoll)
	}
	after := partitionLogBytes(t, a, topic, 0)

	check := func(when string) { t.Helper(); checkLatestValues(t, a.Addr(), topic, want, when) }
	check("after cleaning")
	// The cleaned segments, gaps and all, must pass recovery.
	a.Restart(t)
	check("after a restart")
	for _, line := range strings.Split(a.Logs(), "\n") {
		if strings.Contains(line, "cleaned log") {
			t.Logf("agent: %s", line) // bytes and duration of each pass
		}
	}
	t.Logf("disk bytes before cleaning %d, after %d (%d live keys, %d updates, %.1f bytes per live key)",
		before, after, live, updates, float64(after)/float64(live))
	// O(live keys): well under 200 bytes per key for ~25-byte records,
	// where the uncleaned log holds every update.
	if after > int64(live)*200 || after*5 > before {
		t.Fatalf("after cleaning the partition holds %d bytes for %d live keys (%d before)", after, live, before)
	}
}

// TestIdempotentProducerAcrossCleanings (issue 22): franz-go's idempotent
// producer writes a keyed stream to a compacted topic while the cleaner
// rewrites its segments and the agent restarts once (recovery then reads
// the cleaned segments, gaps and all); no produce fails, in particular none with
// OUT_OF_ORDER_SEQUENCE_NUMBER, and every key reads back its latest value.
func TestIdempotentProducerAcrossCleanings(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: cleanerArgs})
	const topic = "compacted-idempotent"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("16384"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	})
	// Idempotence is franz-go's default; retries ride out the restart.
	cl := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(100),
		kgo.RetryTimeout(time.Minute))
	want := map[string]string{}
	produce := func(round, n int) {
		for i := range n {
			k := "key-" + strconv.Itoa(i%50)
			if i == n-1 {
				k = "round-" + strconv.Itoa(round) // written once: its loss would show
			}
			v := fmt.Sprintf("%d-%d", round, i)
			want[k] = v
			if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
				if errors.Is(err, kerr.OutOfOrderSequenceNumber) {
					t.Fatalf("round %d: OUT_OF_ORDER_SEQUENCE_NUMBER after cleaning: %v", round, err)
				}
				t.Fatalf("round %d record %d: %v", round, i, err)
			}
		}
	}
	runs := func() float64 { return metricValue(t, a.HTTPAddr(), "strata_log_cleaner_runs_total") }
	for round := range 6 {
		before := runs()
		produce(round, 300)
		deadline := time.Now().Add(conditionLimit)
		for runs() <= before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no cleaning pass:\n%s", round, a.Logs())
			}
			time.Sleep(conditionPoll)
		}
		if round == 2 {
			a.Restart(t)
		}
	}
	got, _ := readCompacted(t, a.Addr(), topic)
	for k, v := range want {
		if string(got[k]) != v {
			t.Fatalf("key %s: read %q, want %q", k, got[k], v)
		}
	}
	if logs := a.Logs(); strings.Contains(logs, "out of order sequence") {
		t.Fatalf("the agent refused a sequence:\n%s", logs)
	}
	t.Logf("%v cleaning passes while producing", runs())
}
