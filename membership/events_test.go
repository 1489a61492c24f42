package membership

import (
	"testing"
	"time"
)

func TestEventQueueCoalescesUpdates(t *testing.T) {
	q := newEventQueue(16, nil)
	q.push(Event{Type: EventJoin, Member: Member{Name: "a"}})
	q.push(Event{Type: EventUpdate, Member: Member{Name: "a", State: StateJoining}})
	q.push(Event{Type: EventUpdate, Member: Member{Name: "b", State: StateJoining}})
	q.push(Event{Type: EventUpdate, Member: Member{Name: "a", State: StateActive}})
	q.push(Event{Type: EventUpdate, Member: Member{Name: "a", State: StateDraining}})
	got := q.take()
	want := []Event{
		{Type: EventJoin, Member: Member{Name: "a"}},
		{Type: EventUpdate, Member: Member{Name: "a", State: StateDraining}},
		{Type: EventUpdate, Member: Member{Name: "b", State: StateJoining}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i].Type != want[i].Type || got[i].Member != want[i].Member {
			t.Fatalf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if q.take() != nil {
		t.Fatal("take twice returned events twice")
	}
}

func TestEventQueueOverflow(t *testing.T) {
	var dropped []int
	q := newEventQueue(16, func(n int) { dropped = append(dropped, n) })
	for i := range 40 {
		q.push(Event{Type: EventBroadcast, Key: string(rune('a' + i%26))})
	}
	got := q.take()
	// 16 fill the queue; the 17th drops them (overflow + 1 = 2 items);
	// 14 more fill it again; the 31st drops 15 (1 + the 14 after it; the
	// overflow's 16 are carried over), and 9 more follow.
	if len(got) > 16 {
		t.Fatalf("queue holds %d events, more than its limit", len(got))
	}
	if got[0].Type != EventOverflow || got[0].Dropped != 16+15 {
		t.Fatalf("first event = %+v, want an overflow of 31", got[0])
	}
	if len(got) != 1+40-31 {
		t.Fatalf("%d events after the overflow, want %d", len(got)-1, 40-31)
	}
	for _, e := range got[1:] {
		if e.Type != EventBroadcast {
			t.Fatalf("unexpected %+v", e)
		}
	}
	if len(dropped) != 2 || dropped[0] != 16 || dropped[1] != 31 {
		t.Fatalf("onDrop calls %v, want [16 31]", dropped)
	}
}

func TestEventQueueDispatch(t *testing.T) {
	q := newEventQueue(16, nil)
	out := make(chan Event)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		q.dispatch(out, done)
		close(finished)
	}()
	q.push(Event{Type: EventJoin, Member: Member{Name: "a"}})
	q.push(Event{Type: EventLeave, Member: Member{Name: "a"}})
	for _, want := range []EventType{EventJoin, EventLeave} {
		select {
		case e := <-out:
			if e.Type != want {
				t.Fatalf("got %v, want %v", e.Type, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event", want)
		}
	}
	// A reader that stops does not hold up push, and close ends dispatch
	// even with an event in hand.
	for range 100 {
		q.push(Event{Type: EventBroadcast})
	}
	close(done)
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("dispatch did not stop")
	}
	if _, ok := <-out; ok {
		t.Fatal("out not closed")
	}
}
