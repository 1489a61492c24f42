package abuse

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestManyTopicsUnderDescriptorLimit is issue 19's descriptor probe: an
// agent limited to 2,048 open files gets 2,100 topics auto-created through
// Metadata requests, a record produced to each and read back, then a
// SIGTERM and a restart under the same limit, after which every
// acknowledged record is read back again. Before segment files went
// through a bounded pool, the topics took every descriptor (accepts,
// produce and consume failed) and the restart died with "too many open
// files".
//
// The topics are created by Metadata with auto-creation, in requests of
// 300 names repeated for the names still missing. The auto-creation bounds
// are raised to that: at their defaults (20 a request, 20 a second) the
// creation alone would take 105 s, and they have probes of their own
// (TestMetadataFlood, agent.TestAutoCreateRate).
func TestManyTopicsUnderDescriptorLimit(t *testing.T) {
	const (
		limit     = 2048
		topics    = 2100
		perRound  = 300
		maxRounds = 100
	)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit(1) to give the agent a descriptor limit")
	}
	start := time.Now()
	a := testagent.Start(t, testagent.Options{OpenFileLimit: limit, ReadyTimeout: 120 * time.Second,
		ExtraArgs: []string{"--auto-create-topics-per-request", fmt.Sprint(perRound), "--auto-create-topics-rate", "1000"},
		// Closing 2,100 logs (an fsync and a clean mark each) takes a while.
		StopTimeout: 60 * time.Second})
	checkLimit := func() {
		t.Helper()
		if got, err := openFileLimit(a.PID()); err != nil || got != limit {
			t.Fatalf("agent's open-file limit %d (%v), want %d", got, err, limit)
		}
	}
	checkLimit()
	peak := startFDSampler(t, a)

	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("fds-%04d", i)
	}
	// Creating 300 topics can take longer than the client's usual request
	// timeout on a loaded machine; cutting it off would only resend it.
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.ProducerLinger(5*time.Millisecond), kgo.RequestTimeoutOverhead(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Each phase has its own deadline, generous for a loaded machine; a
	// quiet one runs the whole probe in about 75 s.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	var metadataBytes int64
	missing := names
	for round := 0; len(missing) > 0; round++ {
		if round == maxRounds || ctx.Err() != nil {
			t.Fatalf("%d of %d topics still missing after %d Metadata rounds", len(missing), topics, round)
		}
		// The requests of a round go at once, as a client's would.
		var (
			mu    sync.Mutex
			still []string
			wg    sync.WaitGroup
		)
		for i := 0; i < len(missing); i += perRound {
			chunk := missing[i:min(i+perRound, len(missing))]
			req := kmsg.NewPtrMetadataRequest()
			req.AllowAutoTopicCreation = true
			for _, n := range chunk {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, rt)
			}
			metadataBytes += int64(len(req.AppendTo(nil)))
			wg.Go(func() {
				resp, err := req.RequestWith(ctx, cl)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Logf("Metadata round %d: %v", round, err)
					still = append(still, chunk...)
					return
				}
				for _, rt := range resp.Topics {
					if rt.ErrorCode != 0 || len(rt.Partitions) == 0 {
						still = append(still, *rt.Topic)
					}
				}
			})
		}
		wg.Wait()
		missing = still
		if len(missing) > 0 {
			// Creation may be rate-limited or still settling; ask again.
			time.Sleep(200 * time.Millisecond)
		}
	}
	created := time.Since(start)
	t.Logf("%d topics exist after %v; agent %v", topics, created.Round(time.Millisecond), mustSample(t, a.PID(), a.HTTPAddr()))

	// One record to every topic: every partition's segment file is written
	// and synced, far more files than the agent may keep open.
	var produced int64
	recs := make([]*kgo.Record, topics)
	for i, n := range names {
		recs[i] = &kgo.Record{Topic: n, Value: []byte("value of " + n)}
		produced += int64(len(recs[i].Value))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %d topics: %v", topics, err)
	}
	readBack(ctx, t, a.Addr(), names, "before restart")
	before := mustSample(t, a.PID(), a.HTTPAddr())
	t.Logf("produced and read back %d records; agent %v", topics, before)

	// SIGTERM and a start under the same limit: loading 2,100 logs and
	// taking their leadership back must not run out of descriptors.
	cl.Close()
	restartAt := time.Now()
	a.Restart(t)
	checkLimit()
	t.Logf("restarted in %v", time.Since(restartAt).Round(time.Millisecond))
	ctx, cancel = context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	readBack(ctx, t, a.Addr(), names, "after restart")
	after := mustSample(t, a.PID(), a.HTTPAddr())

	logs := a.Logs()
	if n := strings.Count(logs, "too many open files"); n > 0 {
		t.Errorf("the agent logged %d \"too many open files\" errors", n)
	}
	// --max-connections (10,000 by default) alone passes the limit: each
	// start must say so, naming the flags and the limit.
	if n := strings.Count(logs, `level=WARN msg="--max-connections and --log-max-open-files`); n != 2 {
		t.Errorf("the agent warned %d times of --max-connections and --log-max-open-files over the limit in 2 starts", n)
	}
	if !strings.Contains(logs, "log_max_open_files=512 ") || !strings.Contains(logs, "nofile_limit=2048") {
		t.Errorf("the agent's logs do not show --log-max-open-files 512 under the limit of 2048")
	}
	p := peak()
	t.Logf("descriptor probe: %d topics, bytes sent: metadata %d, record values %d; peak fds %d of %d; peak rss %s before restart, %s after; total %v",
		topics, metadataBytes, produced, p, limit, mib(before.hwm), mib(after.hwm), time.Since(start).Round(time.Millisecond))
	// The segment files stay within --log-max-open-files (a quarter of
	// the limit here, as --max-connections is above it): far below one
	// per partition.
	if p >= limit/2 {
		t.Errorf("peak %d open files under a limit of %d with %d partitions: segment files are not bounded", p, limit, topics)
	}
	// The clean stop was tested by the restart; a second one (2,100 logs
	// each fsynced and marked clean) would only add a minute.
	a.Kill()
}

// startFDSampler counts the agent's open files every 100ms until the test
// ends and returns a function giving the most seen so far.
func startFDSampler(t *testing.T, a *testagent.Agent) func() int {
	var (
		mu   sync.Mutex
		peak int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := countFDs(a.PID()); err == nil {
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// readBack consumes every topic from its start and requires the one
// record produced to each.
func readBack(ctx context.Context, t *testing.T, addr string, names []string, when string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(names...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	for len(want) > 0 {
		if ctx.Err() != nil {
			t.Fatalf("%s: %d of %d records not read back", when, len(want), len(names))
		}
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "value of "+r.Topic {
				delete(want, r.Topic)
			}
		})
		for _, e := range fetches.Errors() {
			if ctx.Err() == nil {
				t.Logf("%s: fetch %s-%d: %v", when, e.Topic, e.Partition, e.Err)
			}
		}
	}
}

// countFDs is the number of files process pid has open.
func countFDs(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds), err
}
