package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// tieringAgentArgs upload as soon as a segment seals and apply local
// retention often.
var tieringAgentArgs = []string{"--tiering-interval=10ms", "--retention-check-interval=100ms", "--remote-chunk-bytes=4096"}

// tieredTopic: small segments and a local disk that keeps about two.
var tieredTopic = map[string]*string{"segment.bytes": ptr("16384"), "local.retention.bytes": ptr("32768"), "retention.ms": ptr("-1")}

func ptr(s string) *string { return &s }

// TestTieringSIGKILLDuringUploads: the agent is SIGKILLed three times while
// a producer writes and segments upload, and restarted each time. Then
// uploads resume until nothing is pending, every manifest entry's objects
// are in the bucket with their sizes and checksums (objects of cut-short
// uploads are orphans no manifest names, left for the janitor), and every
// acknowledged record reads back from offset 0 at its offset.
func TestTieringSIGKILLDuringUploads(t *testing.T) {
	t.Run("fs", func(t *testing.T) { sigkillDuringUploads(t, "", nil) })
	t.Run("minio", func(t *testing.T) {
		minio := miniotest.Start(t)
		for _, kv := range minio.Env() { // for this process's own check of the bucket
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		sigkillDuringUploads(t, minio.StoreURL(minio.NewBucket(t), "strata"), minio.Env())
	})
}

// sigkillDuringUploads runs the test on store ("": the agent's default
// file store in its data dir).
func sigkillDuringUploads(t *testing.T, store string, env []string) {
	args := tieringAgentArgs
	if store != "" {
		args = append(slices.Clone(args), "--store", store)
	}
	a := testagent.Start(t, testagent.Options{ExtraArgs: args, Env: env})
	if store == "" {
		store = "file://" + filepath.Join(a.DataDir(), "store")
	}
	const topic, partitions = "tiered-crash", 2
	adm := newAdmin(t, a.Addr())
	if _, err := adm.CreateTopic(ctxT(t, opTimeout), partitions, 1, tieredTopic, topic); err != nil {
		t.Fatal(err)
	}
	cl := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(8192), kgo.RecordRetries(1<<20), kgo.RecordDeliveryTimeout(60*time.Second))
	acked := map[int32]map[int64]string{0: {}, 1: {}}
	seq := 0
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			p := int32(seq % partitions)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v%07d-%0200d", seq, seq)})
			seq++
		}
		for _, r := range cl.ProduceSync(ctxT(t, 90*time.Second), recs...) {
			if r.Err != nil {
				t.Fatalf("produce: %v", r.Err)
			}
			acked[r.Record.Partition][r.Record.Offset] = string(r.Record.Value)
		}
	}
	for kill := range 3 {
		// At least ten rounds, so that a slow (loaded) machine still
		// writes enough segments for the check below.
		deadline := time.Now().Add(time.Duration(300+150*kill) * time.Millisecond)
		for round := 0; round < 10 || time.Now().Before(deadline); round++ {
			produce(50)
		}
		a.Kill()
		a.Restart(t)
	}
	produce(200)

	waitUploadsDone(t, a.HTTPAddr(), topic, partitions)
	b, err := objstore.Open(ctxT(t, opTimeout), store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := tiering.Verify(ctxT(t, opTimeout), b, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || rep.Segments < 20 {
		t.Fatalf("bucket after the kills: %d segments, problems %+v", rep.Segments, rep.Problems)
	}
	t.Logf("bucket: %d segments, %d bytes, %d orphans from cut-short uploads", rep.Segments, rep.Bytes, len(rep.Orphans))

	out, err := exec.Command(testagent.Build(t), "tiering", "status", "--http", a.HTTPAddr()).CombinedOutput()
	if err != nil {
		t.Fatalf("strata tiering status: %v\n%s", err, out)
	}
	for p := range partitions {
		if !hasFields(string(out), topic, strconv.Itoa(p)) || !strings.Contains(string(out), "LAST-UPLOADED") {
			t.Errorf("strata tiering status lacks partition %d:\n%s", p, out)
		}
	}

	for p := range int32(partitions) {
		got := readPartition(t, a.Addr(), topic, p, len(acked[p]))
		for off, v := range acked[p] {
			if got[off] != v {
				t.Fatalf("partition %d offset %d: read %.12q, acknowledged %.12q", p, off, got[off], v)
			}
		}
	}

	// strata verify (minio-go for s3://) agrees, and finds a named object
	// that goes missing (last: the records it held are then unreadable).
	verify := func(wantOK bool) string {
		t.Helper()
		cmd := exec.Command(testagent.Build(t), "verify", "--store", store)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("strata verify: %v (want ok %v)\n%s", err, wantOK, out)
		}
		return string(out)
	}
	if out := verify(true); !strings.Contains(out, fmt.Sprintf("segments %d,", rep.Segments)) {
		t.Errorf("strata verify disagrees with the in-process check (%d segments):\n%s", rep.Segments, out)
	}
	if err := b.Delete(ctxT(t, opTimeout), namedObject(t, b)); err != nil {
		t.Fatal(err)
	}
	if out := verify(false); !strings.Contains(out, "missing") {
		t.Errorf("strata verify did not report the deleted object:\n%s", out)
	}
}

// waitUploadsDone polls the agent's /v1/tiering until every partition of
// topic has something in the bucket and nothing sealed left to upload.
func waitUploadsDone(t *testing.T, httpAddr, topic string, partitions int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var st struct{ Partitions []tiering.Status }
		resp, err := http.Get("http://" + httpAddr + "/v1/tiering")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		done := 0
		for _, s := range st.Partitions {
			if s.Topic == topic && s.LagSegments == 0 && s.RemoteSegments > 0 && s.LocalStart > 0 {
				done++
			}
		}
		if err == nil && done == partitions {
			return
		}
		last = fmt.Sprintf("%+v %v", st.Partitions, err)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("uploads never finished: %s", last)
}

// readPartition reads partition p from offset 0 until it has n records and
// returns them by offset.
func readPartition(t *testing.T, addr, topic string, p int32, n int) map[int64]string {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}))
	got := map[int64]string{}
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = string(r.Value) })
	}
	if len(got) < n {
		t.Fatalf("partition %d: read %d records from offset 0, want %d", p, len(got), n)
	}
	return got
}

// namedObject returns the key of an object some manifest in b names.
func namedObject(t *testing.T, b objstore.Bucket) string {
	t.Helper()
	var prefix string
	b.List(ctxT(t, opTimeout), "topics/", func(key string, _ objstore.Attributes) error {
		if p, ok := strings.CutSuffix(key, "manifest/head.json"); ok && prefix == "" {
			prefix = p
		}
		return nil
	})
	h, _, err := tiering.NewManifest(b, prefix, 0).Load(ctxT(t, opTimeout))
	if err != nil || len(h.Tail) == 0 {
		t.Fatalf("no manifest entry to delete under %q: %v", prefix, err)
	}
	return prefix + h.Tail[0].Object + ".index"
}
