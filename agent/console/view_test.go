package console

import (
	"math"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering"
)

// TestBuildMergesReports: partition numbers come from the report of the
// leader the metadata names, counters are summed over agents, a silent
// agent leaves its partitions unreported, and the cost is priced per
// agent's uptime.
func TestBuildMergesReports(t *testing.T) {
	agents := []AgentInfo{{ID: 2, State: "active"}, {ID: 0, State: "active"}, {ID: 1, State: "draining"}}
	topics := []TopicState{{Name: "t", Partitions: []PartitionState{
		{Index: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		{Index: 0, Leader: 0, Replicas: []int32{0, 1}, ISR: []int32{0}, Target: []int32{0, 2}},
		{Index: 2, Leader: 2, Replicas: []int32{2, 0}, ISR: []int32{2, 0}},
	}}}
	day := 24 * 3600.0
	locals := map[int32]*Local{
		0: {AgentID: 0, UptimeSeconds: day, Partitions: []LocalPartition{{Topic: "t", Partition: 0, LogStart: 10, HighWatermark: 110, LocalBytes: 500,
			Tiering: &tiering.Status{RemoteBytes: 4000}},
			{Topic: "t", Partition: 1, HighWatermark: 999}}, // a stale claim: the metadata names agent 1
			BytesIn: map[string]float64{"t": 7}, StoreUsage: map[string]tiering.TopicUsage{"t": {Puts: 1000, BytesWritten: 1 << 30}},
			StoreRequests: map[string]map[string]float64{"put": {"ok": 5, "error": 1}},
			Load:          AgentLoad{InBytesPerSecond: 1000, OutBytesPerSecond: 3000, Utilization: ptr(0.4)}},
		1: {AgentID: 1, UptimeSeconds: 2 * day, Partitions: []LocalPartition{{Topic: "t", Partition: 1, LogStart: 0, HighWatermark: 50, LocalBytes: 300}},
			BytesIn: map[string]float64{"t": 3}, StoreUsage: map[string]tiering.TopicUsage{"t": {Puts: 1000, Gets: 2000, BytesWritten: 1 << 30}},
			StoreRequests: map[string]map[string]float64{"put": {"ok": 2}, "get": {"not_found": 4}}},
	}
	prices := Prices{PutPer1000: 1, GetPer1000: 0.5, StorageGBMonth: 2}
	v := Build(0, agents, topics, locals, nil, prices, []string{"agent 2: down"})

	if v.Counts.Agents != 3 || v.Counts.Partitions != 3 || v.Counts.UnderReplicated != 1 || len(v.Moves) != 1 {
		t.Errorf("counts %+v, moves %+v", v.Counts, v.Moves)
	}
	if v.Agents[0].ID != 0 || v.Agents[2].ID != 2 || v.Agents[2].Reporting || !v.Agents[0].Reporting {
		t.Errorf("agents %+v", v.Agents)
	}
	if l := v.Agents[0].Load; l.InBytesPerSecond != 1000 || l.OutBytesPerSecond != 3000 || l.Utilization == nil || *l.Utilization != 0.4 {
		t.Errorf("agent 0's load %+v: want its report's", l)
	}
	if l := v.Agents[2].Load; l != (AgentLoad{}) {
		t.Errorf("agent 2, which did not report, has load %+v", l)
	}
	if v.Agents[0].Replicas != 2 || v.Agents[0].Leaders != 1 {
		t.Errorf("agent 0 holds %d replicas, leads %d; want 2 and 1", v.Agents[0].Replicas, v.Agents[0].Leaders)
	}
	tp := v.Topics[0]
	if tp.Records != 150 || tp.LocalBytes != 800 || tp.BucketBytes != 4000 || tp.BytesIn != 10 {
		t.Errorf("topic totals %+v", tp)
	}
	if p := tp.Partitions; p[0].Partition != 0 || !p[0].Reported || p[0].Records != 100 || p[2].Reported {
		t.Errorf("partitions %+v", p)
	}
	if tp.Usage.Puts != 2000 || tp.PutsPerGiB == nil || *tp.PutsPerGiB != 1000 {
		t.Errorf("usage %+v, PUTs/GiB %v", tp.Usage, tp.PutsPerGiB)
	}
	// A month is 30 days: agent 0's 1000 PUTs in a day are 30,000, agent
	// 1's 1000 PUTs and 2000 GETs in two days are 15,000 and 30,000.
	wantRequests := 30*1.0 + 15*1.0 + 30*0.5
	wantStorage := 4000.0 / (1 << 30) * 2
	if c := tp.MonthlyCost; math.Abs(c.Requests-wantRequests) > 1e-9 || math.Abs(c.Storage-wantStorage) > 1e-12 || c.Total != c.Requests+c.Storage {
		t.Errorf("monthly cost %+v, want requests %v storage %v", c, wantRequests, wantStorage)
	}
	if v.Store.Errors != 1 || v.Store.Requests["put"]["ok"] != 7 || v.Store.MonthlyCost != tp.MonthlyCost {
		t.Errorf("store %+v", v.Store)
	}
	if len(v.Errors) != 1 || len(v.Groups) != 0 {
		t.Errorf("errors %v, groups %v", v.Errors, v.Groups)
	}
}

func TestPricesValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Prices
		flag string
	}{
		{DefaultPrices(), ""},
		{Prices{}, ""},
		{Prices{PutPer1000: -0.1}, "--cost-put-per-1000"},
		{Prices{GetPer1000: -1}, "--cost-get-per-1000"},
		{Prices{StorageGBMonth: math.NaN()}, "--cost-storage-gb-month"},
		{Prices{PutPer1000: math.Inf(1)}, "--cost-put-per-1000"},
		{Prices{CrossZonePerGB: -0.02}, "--cost-cross-zone-per-gb"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.flag == "") || err != nil && !strings.HasPrefix(err.Error(), tc.flag+" ") {
			t.Errorf("%+v: %v, want an error naming %q", tc.p, err, tc.flag)
		}
	}
}

func ptr[T any](v T) *T { return &v }
