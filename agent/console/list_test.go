package console

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseSelection(t *testing.T) {
	for _, c := range []struct {
		query string
		want  string // the selection, or the parameter a *ParamError names
	}{
		{"", `"" internal 0+100 0+100`},
		{"q=Orders&internal=false", `"Orders" hidden 0+100 0+100`},
		{"internal=true&topics_limit=1000&topics_offset=4200&groups_limit=1&groups_offset=0", `"" internal 4200+1000 0+1`},
		{"q=" + url.QueryEscape("a b/c%"), `"a b/c%" internal 0+100 0+100`},
		{"q=" + strings.Repeat("x", MaxQueryBytes+1), "q"},
		{"internal=no", "internal"},
		{"topics_limit=0", "topics_limit"},
		{"topics_limit=1001", "topics_limit"},
		{"topics_limit=ten", "topics_limit"},
		{"topics_offset=-1", "topics_offset"},
		{"topics_offset=1.5", "topics_offset"},
		{"groups_limit=-3", "groups_limit"},
		{"groups_offset=x", "groups_offset"},
	} {
		v, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSelection(v)
		var got string
		if pe := (*ParamError)(nil); errors.As(err, &pe) {
			got = pe.Name
			if !strings.HasPrefix(err.Error(), pe.Name+": ") {
				t.Errorf("%q: the message %q does not start with the parameter", c.query, err)
			}
		} else if err != nil {
			got = err.Error()
		} else {
			internal := "internal"
			if s.HideInternal {
				internal = "hidden"
			}
			got = fmt.Sprintf("%q %s %d+%d %d+%d", s.Query, internal, s.Topics.Offset, s.Topics.Limit, s.Groups.Offset, s.Groups.Limit)
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.query, got, c.want)
		}
	}
}

// listView is a built view of n topics t000... (every tenth named
// orders-...), the internal __consumer_offsets, and groups g0..g4.
func listView(n int) View {
	var topics []TopicState
	for i := range n {
		name := fmt.Sprintf("t%03d", i)
		if i%10 == 0 {
			name = fmt.Sprintf("Orders-%03d", i)
		}
		topics = append(topics, TopicState{Name: name, Partitions: []PartitionState{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}})
	}
	topics = append(topics, TopicState{Name: "__consumer_offsets", Internal: true})
	var groups []Group
	for i := range 5 {
		groups = append(groups, Group{Name: fmt.Sprintf("g%d", i)})
	}
	groups = append(groups, Group{Name: "orders-app"})
	return Build(1, []AgentInfo{{ID: 1}}, topics, nil, groups, Prices{}, nil)
}

func names[T any](items []T, name func(T) string) string {
	var out []string
	for _, it := range items {
		out = append(out, name(it))
	}
	return strings.Join(out, ",")
}

func TestSelect(t *testing.T) {
	v := listView(250)
	if v.Counts.Topics != 251 || v.Counts.Groups != 6 || v.Listed.Topics.Matched != 251 || !v.Listed.Internal {
		t.Fatalf("Build: counts %+v, listed %+v", v.Counts, v.Listed)
	}
	topicNames := func(v View) string { return names(v.Topics, func(t Topic) string { return t.Name }) }
	groupNames := func(v View) string { return names(v.Groups, func(g Group) string { return g.Name }) }
	for _, c := range []struct {
		name             string
		s                Selection
		topics, groups   string // the names listed; "" none
		matchedT, matchG int
		firstT, lastT    string // when topics is "*": the first and last listed
		countT           int
	}{
		{name: "default: the first hundred topics, internal first by name", s: DefaultSelection(),
			topics: "*", firstT: "Orders-000", lastT: "t082", countT: 100, groups: "g0,g1,g2,g3,g4,orders-app", matchedT: 251, matchG: 6},
		{name: "the third window", s: Selection{Topics: Window{200, 100}, Groups: Window{0, 100}},
			topics: "*", firstT: "t194", lastT: "t249", countT: 51, groups: "g0,g1,g2,g3,g4,orders-app", matchedT: 251, matchG: 6},
		{name: "past the end", s: Selection{Topics: Window{251, 100}, Groups: Window{6, 100}},
			topics: "", groups: "", matchedT: 251, matchG: 6},
		{name: "q ignores case, over topics and groups", s: Selection{Query: "ORDERS-", Topics: Window{0, 3}, Groups: Window{0, 100}},
			topics: "Orders-000,Orders-010,Orders-020", groups: "orders-app", matchedT: 25, matchG: 1},
		{name: "q, second window", s: Selection{Query: "orders", Topics: Window{20, 10}, Groups: Window{0, 100}},
			topics: "Orders-200,Orders-210,Orders-220,Orders-230,Orders-240", groups: "orders-app", matchedT: 25, matchG: 1},
		{name: "internal topics hidden", s: Selection{Query: "_", HideInternal: true, Topics: Window{0, 100}, Groups: Window{0, 100}},
			topics: "", groups: "", matchedT: 0, matchG: 0},
		{name: "internal topics shown", s: Selection{Query: "__", Topics: Window{0, 100}, Groups: Window{0, 2}},
			topics: "__consumer_offsets", groups: "", matchedT: 1, matchG: 0},
		{name: "groups windowed", s: Selection{Topics: Window{0, 1}, Groups: Window{2, 2}},
			topics: "Orders-000", groups: "g2,g3", matchedT: 251, matchG: 6},
		{name: "nothing matches", s: Selection{Query: "nope", Topics: Window{0, 100}, Groups: Window{0, 100}},
			topics: "", groups: "", matchedT: 0, matchG: 0},
		{name: "only what the principal may describe, counted as such", s: Selection{Query: "orders", Topics: Window{0, 100}, Groups: Window{0, 100},
			MayDescribe: &Describer{Topic: func(n string) bool { return n == "Orders-010" || n == "Orders-240" }, Group: func(string) bool { return false }}},
			topics: "Orders-010,Orders-240", groups: "", matchedT: 2, matchG: 0},
	} {
		got := v.Select(c.s)
		if c.topics == "*" {
			if len(got.Topics) != c.countT || got.Topics[0].Name != c.firstT || got.Topics[len(got.Topics)-1].Name != c.lastT {
				t.Errorf("%s: %d topics %s...%s, want %d %s...%s", c.name, len(got.Topics), got.Topics[0].Name, got.Topics[len(got.Topics)-1].Name, c.countT, c.firstT, c.lastT)
			}
		} else if n := topicNames(got); n != c.topics {
			t.Errorf("%s: topics %q, want %q", c.name, n, c.topics)
		}
		if n := groupNames(got); n != c.groups {
			t.Errorf("%s: groups %q, want %q", c.name, n, c.groups)
		}
		if got.Listed.Topics.Matched != c.matchedT || got.Listed.Groups.Matched != c.matchG ||
			got.Listed.Topics.Offset != c.s.Topics.Offset || got.Listed.Groups.Limit != c.s.Groups.Limit ||
			got.Listed.Query != c.s.Query || got.Listed.Internal == c.s.HideInternal {
			t.Errorf("%s: listed %+v, want %d and %d matched", c.name, got.Listed, c.matchedT, c.matchG)
		}
		if got.Topics == nil || got.Groups == nil {
			t.Errorf("%s: a nil list (JSON null)", c.name)
		}
		if got.Counts != v.Counts || len(got.Agents) != 1 {
			t.Errorf("%s: the cluster's counts %+v changed", c.name, got.Counts)
		}
	}
	// The view selected from is a cached one: it is not changed.
	before := topicNames(v) + "|" + groupNames(v)
	s := v.Select(Selection{Query: "t1", Topics: Window{0, 5}, Groups: Window{0, 1}})
	s.Topics[0].Name = "changed"
	if after := topicNames(v) + "|" + groupNames(v); after != before || v.Listed.Topics.Matched != 251 {
		t.Error("Select changed the view it was given")
	}
}

func TestDetails(t *testing.T) {
	topics := []TopicState{
		{Name: "orders", Partitions: []PartitionState{
			{Index: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
			{Index: 1, Leader: 2, Replicas: []int32{2, 3}, ISR: []int32{2}},
		}},
		{Name: "pay.ments_v1", Partitions: []PartitionState{{Index: 0, Leader: 3, Replicas: []int32{3, 1}, ISR: []int32{3}}}},
	}
	groups := []Group{
		{Name: "billing", State: "Stable", Coordinator: 2, Lag: []GroupPartition{
			{Topic: "orders", Partition: 0, Lag: 5}, {Topic: "orders", Partition: 1, Lag: -1}, {Topic: "pay.ments_v1", Partition: 0, Lag: 7}}},
		{Name: "a/b ü", State: "Empty", Coordinator: 1, Lag: []GroupPartition{{Topic: "pay.ments_v1", Partition: 0, Lag: 2}}},
	}
	v := Build(1, []AgentInfo{{ID: 1, Rack: "r1"}, {ID: 2}}, topics, nil, groups, Prices{}, []string{"agent 3: down"})

	td, ok := v.TopicDetail("orders")
	if !ok || td.Topic.Name != "orders" || len(td.Topic.Partitions) != 2 || td.ServedBy != 1 || len(td.Errors) != 1 {
		t.Errorf("orders: %v %+v", ok, td)
	}
	if g := names(td.Groups, func(g TopicGroup) string { return fmt.Sprintf("%s:%d:%d", g.Name, g.Partitions, g.Lag) }); g != "billing:2:5" {
		t.Errorf("orders' groups %s, want billing with 2 partitions and lag 5 (the unknown -1 not summed)", g)
	}
	if td, ok := v.TopicDetail("pay.ments_v1"); !ok || len(td.Groups) != 2 {
		t.Errorf("pay.ments_v1: %v, groups %+v", ok, td.Groups)
	}
	if _, ok := v.TopicDetail("order"); ok {
		t.Error("a topic found by a prefix of its name")
	}

	if gd, ok := v.GroupDetail("a/b ü"); !ok || gd.Group.State != "Empty" {
		t.Errorf("group a/b ü: %v %+v", ok, gd)
	}
	if _, ok := v.GroupDetail("billin"); ok {
		t.Error("a group found by a prefix of its id")
	}

	for _, c := range []struct {
		id                 int32
		found              bool
		state              string
		replicas, leaders  int
		listed, coordinate string
	}{
		{1, true, "", 2, 1, "orders-0:1:isr,pay.ments_v1-0:3:out", "a/b ü"},
		{2, true, "", 2, 1, "orders-0:1:isr,orders-1:2:isr", "billing"},
		// Not live, yet named in replicas: what it holds, "not live".
		{3, true, "not live", 2, 1, "orders-1:2:out,pay.ments_v1-0:3:isr", ""},
		{4, false, "", 0, 0, "", ""},
	} {
		ad, ok := v.AgentDetail(c.id)
		if ok != c.found {
			t.Errorf("agent %d: found %v", c.id, ok)
			continue
		}
		if !ok {
			continue
		}
		listed := names(ad.Replicas, func(r AgentReplica) string {
			isr := "out"
			if r.InISR {
				isr = "isr"
			}
			return fmt.Sprintf("%s-%d:%d:%s", r.Topic, r.Partition, r.Leader, isr)
		})
		if ad.Agent.ID != c.id || ad.Agent.State != c.state || ad.Agent.Replicas != c.replicas || ad.Agent.Leaders != c.leaders ||
			listed != c.listed || strings.Join(ad.Coordinates, ",") != c.coordinate || ad.CoordinatesTotal != len(ad.Coordinates) {
			t.Errorf("agent %d: %+v, replicas %s, coordinates %v", c.id, ad.Agent, listed, ad.Coordinates)
		}
	}
	if ad, _ := v.AgentDetail(1); ad.Agent.Rack != "r1" || !slices.Equal(ad.Replicas[1].Replicas, []int32{3, 1}) {
		t.Errorf("agent 1: %+v", ad)
	}
}
