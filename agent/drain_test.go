package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/membership"

	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/testwait"
)

// drainRequest sends method to agent a's /v1/drain with query and decodes
// the JSON answer.
func drainRequest(t *testing.T, a *running, method, query string) (int, map[string]any) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, "http://"+a.HTTPAddr().String()+"/v1/drain?"+query, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s /v1/drain?%s: %s, body not JSON: %v", method, query, resp.Status, err)
	}
	return resp.StatusCode, out
}

// TestForcedDrainUploadsTheOnlyCopy: a lone agent refuses a plain drain
// (nowhere to move its replicas) and keeps serving; a forced one stops it,
// after sealing and uploading the records only it held (all in the
// active segment here), so that an agent rebuilt on a new disk reads them
// back from the bucket.
func TestForcedDrainUploadsTheOnlyCopy(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data1"), store), nil)
	cl := a.client(t)
	createTopic(t, cl, "alone", 1, map[string]string{"retention.ms": "-1"})
	values := produceValues(t, cl, "alone", 0, 50)

	status, out := drainRequest(t, a, http.MethodPost, "")
	if status != http.StatusConflict || !strings.Contains(out["error"].(string), "under-replicated") {
		t.Fatalf("plain drain of a lone agent: %d %v", status, out)
	}
	if _, out = drainRequest(t, a, http.MethodGet, ""); out["draining"] != false || !a.ready.Load() {
		t.Fatalf("after a refused drain: %v, ready %v", out, a.ready.Load())
	}

	if status, out = drainRequest(t, a, http.MethodPost, "force=true&timeout=2s"); status != http.StatusOK {
		t.Fatalf("forced drain: %d %v", status, out)
	}
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("Run after a forced drain: %v", err)
		}
		a.cancel = nil // it stopped by itself
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop after a forced drain")
	}

	cfg := tieringTestConfig(t, filepath.Join(dir, "data2"), store)
	cfg.AgentID = 0
	b := start(t, cfg, nil)
	got := consumeFrom(t, b, "alone", 0, len(values))
	if len(got) != len(values) {
		t.Fatalf("a rebuilt agent read %d records from the bucket, want %d", len(got), len(values))
	}
	for i := range got {
		if !bytes.Equal(got[i], values[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestUnfinishedDrainLeavesTheAgentUp: a drain asked through another
// agent (?agent=) that cannot finish in its time limit leaves the agent
// running and active again, and says why.
func TestUnfinishedDrainLeavesTheAgentUp(t *testing.T) {
	c := startClusterWith(t, 2, func(cfg *Config) { cfg.AutoRebalance = false })
	c.create("stay", 2, 1, nil)
	target := c.agents[1]
	if status, out := drainRequest(t, c.agents[0], http.MethodPost, "agent=1&timeout=1ms"); status != http.StatusOK {
		t.Fatalf("drain of agent 1 through agent 0: %d %v", status, out)
	}
	var out map[string]any
	testwait.Until(t, 10*time.Second, func() bool {
		_, out = drainRequest(t, c.agents[0], http.MethodGet, "agent=1")
		e, _ := out["error"].(string)
		return out["draining"] == false && strings.Contains(e, "stays up")
	}, "the drain to end")
	if out["agent_id"] != float64(1) {
		t.Errorf("answer from agent %v, want 1", out["agent_id"])
	}
	select {
	case err := <-target.done:
		t.Fatalf("agent 1 stopped: %v", err)
	default:
	}
	if s := target.members.Self().State; s != membership.StateActive {
		t.Errorf("agent 1 is %v after the unfinished drain, want active", s)
	}
	if status, _ := drainRequest(t, c.agents[0], http.MethodGet, "agent=7"); status != http.StatusNotFound {
		t.Errorf("drain of an unknown agent: %d, want 404", status)
	}
	if status, _ := drainRequest(t, c.agents[0], http.MethodPost, "timeout=soon"); status != http.StatusBadRequest {
		t.Errorf("drain with a bad timeout: %d, want 400", status)
	}
}

// TestReplicationFactorComesBack: a forced drain of one of three agents
// leaves partitions of replication factor 3 on the two others; when the
// agent is back, the balancer gives each its third replica again.
func TestReplicationFactorComesBack(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) { cfg.RebalanceSettle = time.Second })
	c.create("rf", 2, 3, nil)
	leaving := c.agents[2]
	if status, out := drainRequest(t, leaving, http.MethodPost, "force=true&timeout=30s"); status != http.StatusOK {
		t.Fatalf("forced drain: %d %v", status, out)
	}
	select {
	case err := <-leaving.done:
		if err != nil {
			t.Fatalf("Run after the drain: %v", err)
		}
		leaving.cancel = nil
	case <-time.After(45 * time.Second):
		t.Fatal("the drained agent did not stop")
	}
	replicaCounts := func() []int {
		c.agents[0].ctl.RefreshStates(ctxT(t), true)
		e, _ := c.agents[0].entry("rf")
		var n []int
		for _, p := range e.Snap.Partitions {
			st := partition.StateOf(p)
			if st.Moving() || len(st.ISR) != len(st.Replicas) {
				return nil
			}
			n = append(n, len(st.Replicas))
		}
		return n
	}
	testwait.Until(t, 30*time.Second, func() bool { return slices.Equal(replicaCounts(), []int{2, 2}) }, "two replicas each after the drain")
	c.restart(2)
	testwait.Until(t, 60*time.Second, func() bool { return slices.Equal(replicaCounts(), []int{3, 3}) }, "three replicas each again")
	e, _ := c.agents[0].entry("rf")
	for _, p := range e.Snap.Partitions {
		if st := partition.StateOf(p); st.ReplicationFactor != 3 {
			t.Errorf("partition %d: stored replication factor %d, want 3", p.Index(), st.ReplicationFactor)
		}
	}
}

// logRecords is a slog.Handler that keeps every record, for tests that
// check what was logged at which level.
type logRecords struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// find returns the records whose message contains msg.
func (h *logRecords) find(msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.records {
		if strings.Contains(r.Message, msg) {
			out = append(out, r)
		}
	}
	return out
}

// TestLoneAgentStopsWithoutWarning: SIGTERM's drain finds no other agent
// to drain to; a lone agent says so at info, with the replicas it keeps,
// and warns about nothing, since stopping alone is the normal case.
func TestLoneAgentStopsWithoutWarning(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DrainTimeout = 10 * time.Second
	logs := &logRecords{}
	a, err := New(context.Background(), cfg, Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	r := runAgent(t, a)
	createTopic(t, r.client(t), "lonely", 2, nil)
	r.stop(t)

	got := logs.find("no other agent to drain to")
	if len(got) != 1 || got[0].Level != slog.LevelInfo {
		t.Fatalf("records saying there is no other agent: %v, want one at info", got)
	}
	got[0].Attrs(func(at slog.Attr) bool {
		if at.Key == "replicas" && at.Value.Int64() != 2 {
			t.Errorf("replicas=%v, want 2", at.Value)
		}
		return true
	})
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, rec := range logs.records {
		if rec.Level >= slog.LevelWarn {
			t.Errorf("a lone agent's stop logged %s %q", rec.Level, rec.Message)
		}
	}
}
