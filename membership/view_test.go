package membership

import (
	"testing"
	"time"
)

func TestViewEvents(t *testing.T) {
	t0 := time.UnixMilli(1000)
	self := Member{ID: 1, Name: "agent-1-aa", GossipAddr: "127.0.0.1:1", State: StateActive, Started: t0}
	b := Member{ID: 2, Name: "agent-2-bb", GossipAddr: "127.0.0.1:2", State: StateJoining, Started: t0}
	b2 := b
	b2.State = StateActive
	// c claims b's id from another address, started later.
	c := Member{ID: 2, Name: "agent-2-cc", GossipAddr: "127.0.0.1:3", State: StateJoining, Started: t0.Add(time.Second)}
	// d claims this agent's id.
	d := Member{ID: 1, Name: "agent-1-dd", GossipAddr: "127.0.0.1:4", State: StateJoining, Started: t0}

	v := newView(self.Name)
	steps := []struct {
		name string
		do   func() []Event
		want []Event
	}{
		{"self joins silently", func() []Event { return v.upsert(EventJoin, self) }, nil},
		{"b joins", func() []Event { return v.upsert(EventJoin, b) }, []Event{{Type: EventJoin, Member: b}}},
		{"b updates", func() []Event { return v.upsert(EventUpdate, b2) }, []Event{{Type: EventUpdate, Member: b2}}},
		{"c claims b's id", func() []Event { return v.upsert(EventJoin, c) },
			[]Event{{Type: EventJoin, Member: c}, {Type: EventDuplicate, Member: c, Other: b2}}},
		{"c updating is not reported again", func() []Event { return v.upsert(EventUpdate, c) },
			[]Event{{Type: EventUpdate, Member: c}}},
		{"d claims my id: I am Other", func() []Event { return v.upsert(EventJoin, d) },
			[]Event{{Type: EventJoin, Member: d}, {Type: EventDuplicate, Member: d, Other: self}}},
		{"b fails", func() []Event { return v.remove(b.Name) }, []Event{{Type: EventFail, Member: b2}}},
		{"b fails twice: nothing", func() []Event { return v.remove(b.Name) }, nil},
		{"an intent from a stranger is ignored", func() []Event { v.markLeaving("agent-9-99"); return nil }, nil},
		{"d announces its leave", func() []Event { v.markLeaving(d.Name); return nil }, nil},
		{"d leaves", func() []Event { return v.remove(d.Name) }, []Event{{Type: EventLeave, Member: d}}},
		{"b back: a new pair with c", func() []Event { return v.upsert(EventJoin, b) },
			[]Event{{Type: EventJoin, Member: b}, {Type: EventDuplicate, Member: b, Other: c}}},
		{"b back, then fails: a fail, not a leave", func() []Event { return v.remove(b.Name) }, []Event{{Type: EventFail, Member: b}}},
		{"self leaves silently", func() []Event { v.markLeaving(self.Name); return v.remove(self.Name) }, nil},
	}
	for _, s := range steps {
		got := s.do()
		if len(got) != len(s.want) {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
		for i := range got {
			if got[i].Type != s.want[i].Type || got[i].Member != s.want[i].Member || got[i].Other != s.want[i].Other {
				t.Fatalf("%s: event %d = %+v, want %+v", s.name, i, got[i], s.want[i])
			}
		}
	}
	if len(v.leaving) != 0 {
		t.Fatalf("leave intents left behind: %v", v.leaving)
	}
	// Members sharing an id: newest first.
	v.upsert(EventJoin, b)
	ms := v.sorted()
	if len(ms) != 2 || ms[0] != c || ms[1] != b {
		t.Fatalf("sorted = %+v, want c then b", ms)
	}
}
