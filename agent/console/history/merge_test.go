package history

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/console"
)

// TestMergeAgents: two agents' histories on one timeline; topic and store
// rates summed where both have a point, a group's lag from the leader's
// high watermark and the coordinator's committed offset at each slot,
// the cost per hour at the serving agent's prices, and the caps' notes.
func TestMergeAgents(t *testing.T) {
	ms := t0.UnixMilli()
	p0 := int32(0)
	p1 := int32(1)
	nan := math.NaN()
	leader := Agent{AgentID: 0, ResolutionSeconds: 5, Times: []int64{ms, ms + 5000, ms + 10000}, RingBytes: 100,
		Series: []Series{
			{Metric: TopicBytesIn, Topic: "t", Values: Values{nan, 100, 200}},
			{Metric: StoreRequests, Label: "put", Values: Values{nan, 2, 2}},
			{Metric: StoreRequests, Label: "list", Values: Values{nan, 1, 1}},
			{Metric: StoreRequests, Label: "get", Values: Values{nan, 10, 10}},
			{Metric: StoreBytes, Label: "write", Values: Values{nan, 1000, 0}},
			{Metric: BucketBytes, Values: Values{1 << 30, 1 << 30, 1 << 30}},
			{Metric: ProduceP99, Values: Values{nan, 0.004, 0.008}},
			{Metric: HighWatermark, Topic: "t", Partition: &p0, Values: Values{100, 150, 200}},
			{Metric: HighWatermark, Topic: "t", Partition: &p1, Values: Values{10, 10, 10}},
		},
		Dropped: Dropped{Partitions: 3}}
	// The coordinator's points are one slot later.
	coordinator := Agent{AgentID: 1, ResolutionSeconds: 5, Times: []int64{ms + 5000, ms + 10000, ms + 15000}, RingBytes: 50,
		Series: []Series{
			{Metric: TopicBytesIn, Topic: "t", Values: Values{1, 2, 3}},
			{Metric: TopicBytesIn, Topic: "__consumer_offsets", Values: Values{5, 5, 5}},
			{Metric: BucketBytes, Values: Values{1 << 30, 1 << 30, 1 << 30}},
			{Metric: Committed, Group: "g", Topic: "t", Partition: &p0, Values: Values{140, 160, 210}},
			{Metric: Committed, Group: "g", Topic: "t", Partition: &p1, Values: Values{10, 12, 12}},
		}}
	prices := console.Prices{PutPer1000: 5, GetPer1000: 0.4, StorageGBMonth: 720}
	v := Merge(1, []Agent{coordinator, leader}, map[string]bool{"__consumer_offsets": true}, prices, []string{"agent 2: down"})

	if len(v.Times) != 4 || v.Times[0] != ms || v.Times[3] != ms+15000 {
		t.Fatalf("times %v", v.Times)
	}
	if len(v.Topics) != 2 || v.Topics[0].Name != "__consumer_offsets" || !v.Topics[0].Internal || v.Topics[1].Name != "t" {
		t.Fatalf("topics %+v", v.Topics)
	}
	checkValues(t, "t bytes in", v.Topics[1].BytesIn, Values{nan, 101, 202, 3})
	checkValues(t, "t bytes out", v.Topics[1].BytesOut, Values{nan, nan, nan, nan})
	checkValues(t, "puts", v.Store.Requests["put"], Values{nan, 2, 2, nan})
	checkValues(t, "written", v.Store.WriteBytes, Values{nan, 1000, 0, nan})
	checkValues(t, "bucket bytes", v.Store.BucketBytes, Values{1 << 30, 2 << 30, 2 << 30, 1 << 30})
	// 3 PUT-class and 10 GET-class requests a second for an hour, and
	// 2 GiB at 720 per GB-month (1 per GB-hour).
	reqCost := (3*5 + 10*0.4) * 3600 / 1000
	checkValues(t, "request cost", v.Store.RequestCost, Values{nan, reqCost, reqCost, nan})
	checkValues(t, "cost", v.Store.Cost, Values{1, reqCost + 2, reqCost + 2, 1})

	if len(v.Groups) != 1 || len(v.Groups[0].Partitions) != 2 {
		t.Fatalf("groups %+v", v.Groups)
	}
	g := v.Groups[0]
	// Lag where both are known: partition 0 at 150-140 and 200-160;
	// partition 1 at 10-10 and 10-12 (a commit past the end: 0).
	checkValues(t, "lag t-0", g.Partitions[0].Lag, Values{nan, 10, 40, nan})
	checkValues(t, "lag t-1", g.Partitions[1].Lag, Values{nan, 0, 0, nan})
	checkValues(t, "total lag", g.TotalLag, Values{nan, 10, 40, nan})

	if len(v.Agents) != 2 || v.Agents[0].ID != 0 || v.Agents[0].RingBytes != 100 {
		t.Fatalf("agents %+v", v.Agents)
	}
	checkValues(t, "agent 0 p99", v.Agents[0].ProduceP99, Values{nan, 0.004, 0.008, nan})
	if len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "agent 0") || len(v.Errors) != 1 {
		t.Errorf("notes %q, errors %q", v.Notes, v.Errors)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("the view does not marshal: %v", err)
	}
}

// TestMergeAgentRoundTrip: what Since writes, Merge reads back from JSON
// as another agent would receive it.
func TestMergeAgentRoundTrip(t *testing.T) {
	r := NewRing(DefaultConfig())
	for i := range 3 {
		r.Add(Sample{At: t0.Add(time.Duration(i) * 5 * time.Second), Topics: map[string]TopicCounters{"t": {BytesIn: float64(i) * 500}}})
	}
	a := r.Since(0)
	a.AgentID = 7
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Agent
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	v := Merge(7, []Agent{back}, nil, console.DefaultPrices(), nil)
	checkValues(t, "bytes in", v.Topics[0].BytesIn, Values{math.NaN(), 100, 100})
}

func TestValuesJSON(t *testing.T) {
	nan := math.NaN()
	b, err := json.Marshal(Values{nan, 0, 3, -2.5, 1234567.891, 1 << 40, 0.000123456789, math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[null,0,3,-2.5,1.23457e+06,1099511627776,0.000123457,null]"; string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
	var v Values
	if err := json.Unmarshal([]byte(" [ null , 1e3,2 ]"), &v); err != nil {
		t.Fatal(err)
	}
	checkValues(t, "read back", v, Values{nan, 1000, 2})
	for _, bad := range []string{`[1,]`, `[,]`, `["1"]`, `[Inf]`, `[0x10]`, `{}`, `[1 2]`, `[+1]`, `[NaN]`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// FuzzValues: no input panics, and what is read writes back to the same
// numbers.
func FuzzValues(f *testing.F) {
	for _, s := range []string{`[]`, `[null]`, `[1,2.5,null,-3e-7]`, `[1,]`, `null`, `[ 1 , 2 ]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v Values
		if err := v.UnmarshalJSON(b); err != nil {
			return
		}
		out, err := v.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var again Values
		if err := again.UnmarshalJSON(out); err != nil || len(again) != len(v) {
			t.Fatalf("%s read as %v, written as %s: %v", b, v, out, err)
		}
	})
}
