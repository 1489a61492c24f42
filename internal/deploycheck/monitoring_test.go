package deploycheck

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.yaml.in/yaml/v3"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testagent"
)

const (
	monitoringDir = "deploy/monitoring"
	// conditionLimit bounds every wait for the cluster to reach a state.
	conditionLimit = 60 * time.Second
)

// promMetrics are series Prometheus makes itself, not the agent.
var promMetrics = map[string][]string{"up": {"job", "instance"}}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type dashboardPanel struct {
	ID      int              `json:"id"`
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// query is one PromQL expression of the monitoring files, and where it is.
type query struct{ where, expr string }

// TestMonitoringMatchesAgent: see the package doc.
func TestMonitoringMatchesAgent(t *testing.T) {
	root := repoRoot(t)
	job, targetLabels := scrapeJob(t, root)
	queries, records, alerts := readRules(t, root)
	queries = append(queries, readDashboard(t, root)...)

	t.Run("runbook", func(t *testing.T) {
		doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range alerts {
			if !strings.Contains(string(doc), "\n### "+a+"\n") {
				t.Errorf("docs/operations.md has no section \"### %s\" saying what to do about the alert", a)
			}
		}
	})

	fams, live := exerciseCluster(t)
	fams.addLabels(targetLabels)

	t.Run("probes", func(t *testing.T) {
		for _, path := range manifestProbePaths(t, root) {
			resp, err := http.Get("http://" + live.HTTPAddr() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("a ready agent answers the manifests' probe GET %s with %s", path, resp.Status)
			}
		}
	})

	t.Run("autoscaler", func(t *testing.T) {
		checkAutoscaler(t, root, fams, job)
	})

	// A recording rule's series carry the labels its expression keeps;
	// taken here as every label its inputs have, which is loose but
	// catches a name that matches nothing.
	recorded := map[string]map[string]bool{}
	for name, expr := range records {
		labels := map[string]bool{"job": true, "instance": true}
		use, err := parseExpr(expr)
		if err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
		for _, s := range use.selectors {
			l, _ := fams.lookup(s.metric)
			for k := range l {
				labels[k] = true
			}
		}
		recorded[name] = labels
	}
	for _, q := range queries {
		t.Run(q.where, func(t *testing.T) {
			for _, problem := range checkQuery(q.expr, fams, recorded, job) {
				t.Error(problem)
			}
		})
	}
}

// checkQuery lists what expr uses that the agents do not export.
func checkQuery(expr string, fams families, recorded map[string]map[string]bool, job string) []string {
	use, err := parseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("%q: %v", expr, err)}
	}
	var problems []string
	inputs := map[string]bool{}
	for _, s := range use.selectors {
		labels, ok := fams.lookup(s.metric)
		if !ok {
			labels, ok = recorded[s.metric]
		}
		if !ok {
			if names, prom := promMetrics[s.metric]; prom {
				labels, ok = map[string]bool{}, true
				for _, n := range names {
					labels[n] = true
				}
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %s: no agent exports it (histograms: use _bucket, _sum or _count)", s.metric))
			continue
		}
		for l := range labels {
			inputs[l] = true
		}
		for l, v := range s.matchers {
			if !labels[l] {
				problems = append(problems, fmt.Sprintf("%s{%s=...}: the metric has no label %s (it has %v)", s.metric, l, l, slices.Sorted(maps.Keys(labels))))
			}
			if l == "job" && v != job {
				problems = append(problems, fmt.Sprintf("%s{job=%q}: prometheus.yml scrapes the agents as job %q", s.metric, v, job))
			}
		}
	}
	for _, l := range use.grouping {
		if !inputs[l] {
			problems = append(problems, fmt.Sprintf("label %s in a by/on clause: none of the expression's metrics has it", l))
		}
	}
	return problems
}

// readRules returns the expressions of alerts.yaml, its recording rules by
// name, and its alert names; it checks each alert's shape on the way.
func readRules(t *testing.T, root string) (queries []query, records map[string]string, alerts []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, monitoringDir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	records = map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if (r.Alert == "") == (r.Record == "") || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("alerts.yaml group %s: rule %q needs exactly one of alert and record, and an expr", g.Name, name)
				continue
			}
			if r.Record != "" {
				records[r.Record] = r.Expr
			} else {
				if slices.Contains(alerts, r.Alert) {
					t.Errorf("alerts.yaml: alert %s is defined twice", r.Alert)
				}
				alerts = append(alerts, r.Alert)
				if s := r.Labels["severity"]; s != "warning" && s != "critical" {
					t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
				}
				if r.Annotations["summary"] == "" {
					t.Errorf("alert %s: no summary annotation", r.Alert)
				}
				if _, err := time.ParseDuration(r.For); r.For != "" && err != nil {
					t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			queries = append(queries, query{"alerts.yaml/" + name, r.Expr})
		}
	}
	if len(alerts) == 0 {
		t.Fatal("alerts.yaml has no alert")
	}
	return queries, records, alerts
}

// readDashboard returns the expressions of the dashboard's panels.
func readDashboard(t *testing.T, root string) []query {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, monitoringDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string           `json:"uid"`
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.UID == "" {
		t.Error("grafana-dashboard.json: no uid; every import would make a new dashboard")
	}
	var out []query
	ids := map[int]bool{}
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("grafana-dashboard.json: panel id %d is used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("grafana-dashboard.json: panel %q has no query", p.Title)
			}
			for i, tg := range p.Targets {
				out = append(out, query{fmt.Sprintf("dashboard/%s/%d", p.Title, i), tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

// scrapeJob returns the job name prometheus.yml gives the agents, and
// the labels its relabel_configs add to their series.
func scrapeJob(t *testing.T, root string) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, monitoringDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName        string `yaml:"job_name"`
			RelabelConfigs []struct {
				TargetLabel string `yaml:"target_label"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if len(cfg.ScrapeConfigs) != 1 || !slices.Contains(cfg.RuleFiles, "alerts.yaml") {
		t.Fatalf("prometheus.yml: want one scrape config and rule_files [alerts.yaml]; got %+v", cfg)
	}
	var labels []string
	for _, r := range cfg.ScrapeConfigs[0].RelabelConfigs {
		// Labels that start with __ are dropped after relabelling.
		if r.TargetLabel != "" && !strings.HasPrefix(r.TargetLabel, "__") {
			labels = append(labels, r.TargetLabel)
		}
	}
	return cfg.ScrapeConfigs[0].JobName, labels
}

// exerciseCluster starts two agents and makes every metric family the
// monitoring files use have a sample: it produces to a replicated topic
// whose segments are small and leave local disk once uploaded, consumes
// them back in a group (remote reads, a commit), and stops the follower so
// that the leader shrinks the ISR. It returns the families both agents
// exported (the follower's read before it stopped) and the leader, which
// still runs.
func exerciseCluster(t *testing.T) (families, *testagent.Agent) {
	t.Helper()
	store := "file://" + filepath.Join(t.TempDir(), "store")
	var agents []*testagent.Agent
	for i := range 2 {
		args := append(slices.Clone(testagent.FastClusterArgs),
			"--store", store, "--agent-id", fmt.Sprint(i),
			"--tiering-interval", "100ms", "--retention-check-interval", "100ms",
			"--offsets-topic-partitions", "1",
			// strata_agent_utilization_ratio, which the autoscaler asks
			// for, exists only with a capacity.
			"--network-capacity", "200MiB")
		if i > 0 {
			args = append(args, "--join", agents[0].GossipAddr())
		}
		agents = append(agents, testagent.Start(t, testagent.Options{ExtraArgs: args}))
	}
	// Uncompressed, so that the records fill the small segments.
	cl, err := kgo.NewClient(kgo.SeedBrokers(agents[0].Addr(), agents[1].Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*conditionLimit)
	defer cancel()
	for _, a := range agents {
		direct, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		waitFor(t, "agent at "+a.Addr()+" to list both", func() string {
			// Asked of the seed broker itself: the client's own metadata
			// is cached.
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, direct)
			if err != nil || len(resp.Brokers) != 2 {
				return fmt.Sprintf("brokers %v, %v", resp, err)
			}
			return ""
		})
	}

	const topic, records = "ops", 200
	resp, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{
		"segment.bytes":         kadm.StringPtr("16384"),
		"local.retention.bytes": kadm.StringPtr("1"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	value := strings.Repeat("v", 512)
	for batch := range records / 10 {
		var rs []*kgo.Record
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%d-%d %s", batch, i, value))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	leader, follower := agents[0], agents[1]
	waitFor(t, "the partition's leader", func() string {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err.Error()
		}
		switch id := td[topic].Partitions[0].Leader; id {
		case 0:
			return ""
		case 1:
			leader, follower = agents[1], agents[0]
			return ""
		default:
			return fmt.Sprintf("leader %d", id)
		}
	})
	waitFor(t, "segments uploaded and dropped from the leader's disk", func() string {
		resp, err := http.Get("http://" + leader.HTTPAddr() + "/v1/tiering")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		var status struct {
			Partitions []struct {
				Topic      string `json:"topic"`
				LocalStart int64  `json:"local_start_offset"`
			} `json:"partitions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
			return err.Error()
		}
		for _, p := range status.Partitions {
			if p.Topic == topic && p.LocalStart > 0 {
				return ""
			}
		}
		return fmt.Sprintf("GET /v1/tiering: %+v", status.Partitions)
	})

	consumer, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr()), kgo.ConsumerGroup("ops-readers"),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for n := 0; n < records; {
		fetches := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", n, records, err)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		n += fetches.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	failUploads(ctx, t, cl, leader, store, topic, value)

	// The scrape that shows the committed offset is kept whole: the
	// group's coordinator can move between agents (a preferred leader
	// taking __consumer_offsets back) and be loading when a later scrape
	// asks.
	fams := families{}
	waitFor(t, "the committed offset to show on the group's coordinator", func() string {
		for _, a := range agents {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m, err := metricstext.Scrape(ctx, "http://"+a.HTTPAddr()+"/metrics")
			cancel()
			if err != nil {
				return err.Error()
			}
			if v, ok := m.Series("strata_group_committed_offset", "group", "ops-readers", "partition", "0", "topic", "ops"); ok && v == records {
				fams.add(m)
				return ""
			}
		}
		return "no strata_group_committed_offset of ops-readers"
	})
	// The follower's own families (replica copies) must be read before
	// it stops.
	if err := fams.scrape(follower.HTTPAddr()); err != nil {
		t.Fatal(err)
	}
	follower.Kill()
	waitFor(t, "the leader to shrink the ISR", func() string {
		if sampleValue(t, leader, "strata_isr_changes_total", "op", "shrink") < 1 {
			return "no ISR shrink yet"
		}
		return ""
	})
	if err := fams.scrape(leader.HTTPAddr()); err != nil {
		t.Fatal(err)
	}
	return fams, leader
}

// failUploads makes the leader's next uploads of topic fail, as a broken
// store would, until one has failed: the partition's segments directory in
// the file store is replaced by a plain file while a segment seals. Then
// the directory is put back, and the uploader's retries succeed.
func failUploads(ctx context.Context, t *testing.T, cl *kgo.Client, leader *testagent.Agent, store, topic, value string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(strings.TrimPrefix(store, "file://"), "topics", "*", "0", "segments"))
	if err != nil {
		t.Fatal(err)
	}
	var segments string
	for _, d := range dirs {
		// __consumer_offsets' segments are too large to have sealed.
		if entries, _ := os.ReadDir(d); len(entries) > 0 {
			if segments != "" {
				t.Fatalf("more than one partition with uploaded segments: %q", dirs)
			}
			segments = d
		}
	}
	if segments == "" {
		t.Fatalf("no uploaded segments of %s under %s (store layout changed?)", topic, store)
	}
	moved := segments + ".moved"
	if err := os.Rename(segments, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segments, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if _, err := os.Stat(moved); err == nil {
			os.Remove(segments)
			if err := os.Rename(moved, segments); err != nil {
				t.Errorf("put back %s: %v", segments, err)
			}
		}
	}
	defer restore()
	for batch := 0; ; batch++ {
		if sampleValue(t, leader, "strata_tiering_upload_failures_total", "topic", topic) >= 1 {
			return
		}
		if batch >= 100 {
			t.Fatalf("no upload of %s failed after %d more batches", topic, batch)
		}
		var rs []*kgo.Record
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("fail-%d-%d %s", batch, i, value))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// sampleValue returns the value of the series of name with exactly the
// given labels (key, value, ...) from agent a's /metrics; -1 if absent.
func sampleValue(t *testing.T, a *testagent.Agent, name string, labels ...string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+a.HTTPAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Series(name, labels...); ok {
		return v
	}
	return -1
}

// waitFor polls cond until it returns "" or conditionLimit passes; cond
// says what it still waits for.
func waitFor(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(conditionLimit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, conditionLimit, msg)
		}
		<-tick.C
	}
}
