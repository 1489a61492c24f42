package membership

import (
	"cmp"
	"slices"
)

// view is the set of live members as memberlist reported them, with the
// duplicate-id bookkeeping. It is a pure core: the delegate feeds it
// memberlist's notifications (one at a time, under its lock) and queues
// the events it returns.
type view struct {
	self    string            // this node's name
	members map[string]Member // live members (alive or suspect) by node name
	// reported holds the pairs of node names already reported as
	// duplicates, so a pair is reported once per pair of incarnations, not
	// on every meta update.
	reported map[[2]string]struct{}
	// leaving holds the live members that announced a graceful leave, so
	// their departure is reported as EventLeave rather than EventFail.
	leaving map[string]struct{}
}

func newView(self string) *view {
	return &view{self: self, members: make(map[string]Member), reported: make(map[[2]string]struct{}),
		leaving: make(map[string]struct{})}
}

// upsert records m as live and returns the events to deliver: t (join or
// update) unless m is this node, and an EventDuplicate for each other live
// member newly found to claim m's id.
func (v *view) upsert(t EventType, m Member) []Event {
	v.members[m.Name] = m
	var out []Event
	if m.Name != v.self {
		out = append(out, Event{Type: t, Member: m})
	}
	for name, o := range v.members {
		if name == m.Name || o.ID != m.ID {
			continue
		}
		pair := pairKey(name, m.Name)
		if _, ok := v.reported[pair]; ok {
			continue
		}
		v.reported[pair] = struct{}{}
		// The event names the newcomer as Member; this node, when it is one
		// of the two, is always Other, so the event reads "someone else
		// claims my id".
		if m.Name == v.self {
			m, o = o, m
		}
		out = append(out, Event{Type: EventDuplicate, Member: m, Other: o})
	}
	return out
}

// hasOther reports whether a member other than this node is live.
func (v *view) hasOther() bool {
	for name := range v.members {
		if name != v.self {
			return true
		}
	}
	return false
}

// markLeaving records a live member's leave intent. Intents from nodes not
// in the view are ignored, which keeps the set within the member count.
func (v *view) markLeaving(name string) {
	if _, ok := v.members[name]; ok {
		v.leaving[name] = struct{}{}
	}
}

// remove forgets a member that left or failed, and returns the event to
// deliver, if any: EventLeave when it announced its leave, else EventFail.
func (v *view) remove(name string) []Event {
	m, ok := v.members[name]
	if !ok {
		return nil
	}
	_, graceful := v.leaving[name]
	delete(v.leaving, name)
	delete(v.members, name)
	for pair := range v.reported {
		if pair[0] == name || pair[1] == name {
			delete(v.reported, pair)
		}
	}
	if name == v.self {
		return nil
	}
	t := EventFail
	if graceful {
		t = EventLeave
	}
	return []Event{{Type: t, Member: m}}
}

// sorted returns the live members ordered by id; members sharing an id
// (see EventDuplicate) come newest Started first, then by name.
func (v *view) sorted() []Member {
	out := make([]Member, 0, len(v.members))
	for _, m := range v.members {
		out = append(out, m)
	}
	slices.SortFunc(out, compareMembers)
	return out
}

func compareMembers(a, b Member) int {
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	if c := b.Started.Compare(a.Started); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}
