package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testagent"
)

// Sizes in TestConsumePastStoredBomb: the bomb (a few hundred KB
// of gzip holding one 250 MiB record), and a record just under the limit
// Produce applies with the default max.message.bytes (16 × 1 MiB).
const (
	storedBombBytes = 250 << 20
	nearLimitBytes  = 16<<20 - 4<<10
	// consumeMemoryBound is what reading the partition may cost a client
	// (allocated, for franz-go in this process; peak RSS, for kcat) and
	// the agent (peak RSS): a few times the near-limit record, far under
	// the bomb.
	consumeMemoryBound = 160 << 20
)

// TestConsumePastStoredBomb (issue 19): a partition holding a gzip bomb
// that a build without the decompression bound accepted is read past by
// franz-go and by kcat (librdkafka), every other record intact, the record
// near the limit whole, with bounded memory in the clients and the agent;
// the bomb is checked once. The data directory is written as such a build
// left it: records produced, then the bomb and more appended straight
// through the log package, and no decompression-checks file.
func TestConsumePastStoredBomb(t *testing.T) {
	kcat := kcatPath(t)
	a := testagent.Start(t, testagent.Options{})
	const topic = "stored-bomb"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, nil)
	want := map[int64]string{}
	producer := newKgo(t, a.Addr(), kgo.DefaultProduceTopic(topic))
	for i := range 3 {
		v := fmt.Sprintf("before-%d", i)
		r, err := producer.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		want[r.Offset] = v
	}
	producer.Close()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(a.DataDir(), "log", partition.DirName(topic, 0))
	appendStored(t, dir, want)
	a.Restart(t)

	// One more through Produce, above W.
	producer = newKgo(t, a.Addr(), kgo.DefaultProduceTopic(topic))
	r, err := producer.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Value: []byte("after-restart")}).First()
	if err != nil {
		t.Fatalf("produce after the restart: %v", err)
	}
	want[r.Offset] = "after-restart"
	producer.Close()

	got, alloc := consumeAllKgo(t, a.Addr(), topic, len(want))
	t.Logf("franz-go read %d records, allocating %d MiB", len(got), alloc>>20)
	if diff := diffStored(want, got); diff != "" {
		t.Errorf("franz-go: %s", diff)
	}
	if alloc > consumeMemoryBound {
		t.Errorf("franz-go allocated %d MiB reading the partition, bound %d MiB", alloc>>20, consumeMemoryBound>>20)
	}

	got, rss := consumeAllKcat(t, kcat, a.Addr(), topic, r.Offset)
	t.Logf("kcat read %d records, peak RSS %d MiB", len(got), rss>>20)
	if diff := diffStored(want, got); diff != "" {
		t.Errorf("kcat: %s", diff)
	}
	if rss > consumeMemoryBound {
		t.Errorf("kcat peak RSS %d MiB, bound %d MiB", rss>>20, consumeMemoryBound>>20)
	}

	hwm := peakRSS(t, a.PID())
	t.Logf("agent peak RSS %d MiB", hwm>>20)
	if hwm > consumeMemoryBound {
		t.Errorf("agent peak RSS %d MiB, bound %d MiB", hwm>>20, consumeMemoryBound>>20)
	}
	// Both clients read the bomb; it was checked once.
	m, err := metricstext.Scrape(ctxT(t, opTimeout), "http://"+a.HTTPAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.Value("strata_fetch_decompression_checks_total", "verdict", "bad"); n != 1 {
		t.Errorf("bad decompression checks %v, want 1 (the bomb, checked once)", n)
	}
}

// appendStored writes, straight through the log package as a build before
// the bound did, the bomb, a near-limit record and three plain records,
// adds the values a consumer must read to want (the bomb's offset with
// ""), and removes the checks file as such a build would not have one.
func appendStored(t *testing.T, dir string, want map[int64]string) {
	t.Helper()
	l, err := log.Open(dir, log.DefaultConfig(), log.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	epoch := l.LatestEpoch()
	add := func(c batch.Codec, value []byte) int64 {
		o := batch.DefaultBuildOptions()
		o.Codec, o.BaseTimestamp = c, time.Now().UnixMilli()
		raw, err := batch.Build(o, []batch.Record{{Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(raw, epoch)
		if err != nil {
			t.Fatal(err)
		}
		return res.BaseOffset
	}
	bomb := add(batch.CodecGzip, make([]byte, storedBombBytes))
	want[bomb] = "" // skipped
	near := make([]byte, nearLimitBytes)
	for i := range near {
		near[i] = byte(i % 251)
	}
	want[add(batch.CodecGzip, near)] = nearValue(near)
	for i := range 3 {
		v := fmt.Sprintf("after-%d", i)
		want[add(batch.CodecNone, []byte(v))] = v
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "decompression-checks")); err != nil {
		t.Fatal(err)
	}
}

// nearValue names a long value by its size, so that the comparison holds
// no copy of it (franz-go's reader checks the bytes too).
func nearValue(v []byte) string { return sizeName(len(v)) }

func sizeName(n int) string { return fmt.Sprintf("<%d bytes>", n) }

// shortValue is v, or its size when it is long; a long value must be the
// near-limit record's bytes, else it is named as garbled.
func shortValue(v []byte) string {
	if len(v) < 1<<10 {
		return string(v)
	}
	for i := range v {
		if v[i] != byte(i%251) {
			return fmt.Sprintf("<%d bytes, wrong at %d>", len(v), i)
		}
	}
	return sizeName(len(v))
}

// diffStored compares what a consumer read (offset -> value) with want,
// where the bomb's offset must be absent.
func diffStored(want, got map[int64]string) string {
	var diffs []string
	for off, v := range want {
		g, ok := got[off]
		switch {
		case v == "" && ok:
			diffs = append(diffs, fmt.Sprintf("offset %d (the bomb) delivered %d bytes", off, len(g)))
		case v != "" && !ok:
			diffs = append(diffs, fmt.Sprintf("offset %d missing", off))
		case v != "" && g != v:
			diffs = append(diffs, fmt.Sprintf("offset %d: %q, want %q", off, g, v))
		}
	}
	for off := range got {
		if _, ok := want[off]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected offset %d", off))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

// consumeAllKgo reads the partition from the start with franz-go until it
// has n records (the bomb excluded) or the wait ends, and returns them
// with the bytes this process allocated meanwhile.
func consumeAllKgo(t *testing.T, addr, topic string, n int) (map[int64]string, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx := ctxT(t, opTimeout)
	got := map[int64]string{}
	for len(got) < n-1 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Errorf("fetch: %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = shortValue(r.Value) })
	}
	runtime.ReadMemStats(&after)
	return got, after.TotalAlloc - before.TotalAlloc
}

// consumeAllKcat reads the partition from the start with kcat, printing
// offset and size per record, until it printed offset last; then it reads
// kcat's peak RSS from /proc (wait4's would include this process's, shared
// until the exec) and ends it. A second run per short value reads those.
func consumeAllKcat(t *testing.T, kcat, addr, topic string, last int64) (map[int64]string, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-q", "-u",
		"-f", "%o %S\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sizes := map[int64]int{}
	var rss int64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			t.Fatalf("kcat line %q", sc.Text())
		}
		off, err1 := strconv.ParseInt(f[0], 10, 64)
		size, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("kcat line %q", sc.Text())
		}
		sizes[off] = size
		if off >= last {
			rss = peakRSS(t, cmd.Process.Pid)
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if rss == 0 {
		t.Fatalf("kcat ended before offset %d (ctx %v)\nstderr:\n%s", last, ctx.Err(), stderr.String())
	}
	got := map[int64]string{}
	for off, size := range sizes {
		if size >= 1<<10 {
			got[off] = sizeName(size)
			continue
		}
		out := runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", strconv.FormatInt(off, 10), "-c", "1", "-e", "-q", "-f", "%s")
		got[off] = string(out)
	}
	return got, rss
}

// peakRSS is the process's VmHWM in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
