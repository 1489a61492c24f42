package membership

import (
	"fmt"
	"sync"
)

// EventType says what an Event reports.
type EventType uint8

const (
	// EventJoin: Member is now live (new, or back after it failed or left).
	EventJoin EventType = iota + 1
	// EventLeave: Member left gracefully (it called Leave).
	EventLeave
	// EventFail: failure detection declared Member dead. It may be a process
	// that is paused or cut off rather than gone: fence it through the store.
	EventFail
	// EventUpdate: Member changed its meta (state, addresses, rack).
	EventUpdate
	// EventBroadcast: Member (the sender) broadcast Key and Payload. When the
	// sender is not (yet) a known member, only Member.ID and Member.Name are
	// set.
	EventBroadcast
	// EventDuplicate: Member and Other are live and claim the same agent id.
	// Either an agent restarted with a new gossip address before its old
	// incarnation was failed (the one with the later Started is the new one;
	// the other fails soon), or two agents were given one --agent-id. Other
	// may be this agent itself.
	EventDuplicate
	// EventOverflow: the reader fell behind by more than
	// Config.EventQueueLimit events and Dropped events were discarded.
	// Reconcile with Members() (always current) and the store.
	EventOverflow
)

func (t EventType) String() string {
	switch t {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventFail:
		return "fail"
	case EventUpdate:
		return "update"
	case EventBroadcast:
		return "broadcast"
	case EventDuplicate:
		return "duplicate"
	case EventOverflow:
		return "overflow"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is one change delivered by Membership.Events. Events never describe
// this agent itself, except as Other of an EventDuplicate.
type Event struct {
	Type    EventType
	Member  Member
	Other   Member // EventDuplicate only
	Key     string // EventBroadcast only
	Payload []byte // EventBroadcast only; owned by the receiver
	Dropped int    // EventOverflow only
}

// eventQueue sits between memberlist's goroutines, which must never block,
// and the reader of Events, which may be slow. push never blocks; the queue
// holds at most limit events:
//
//   - an EventUpdate replaces a pending EventUpdate of the same node (only
//     the latest meta matters);
//   - when the queue is full, every pending event is dropped and one
//     EventOverflow, counting them, heads the queue. Members() stays exact,
//     so a reader that sees EventOverflow can rebuild its view from it.
type eventQueue struct {
	mu     sync.Mutex
	items  []Event
	limit  int
	ready  chan struct{} // capacity 1: "items may be non-empty"
	onDrop func(dropped int)
}

func newEventQueue(limit int, onDrop func(int)) *eventQueue {
	return &eventQueue{limit: limit, ready: make(chan struct{}, 1), onDrop: onDrop}
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.Type == EventUpdate {
		for i := range q.items {
			if q.items[i].Type == EventUpdate && q.items[i].Member.Name == e.Member.Name {
				q.items[i] = e
				return
			}
		}
	}
	if len(q.items) >= q.limit {
		dropped := 0
		for _, it := range q.items {
			if it.Type == EventOverflow {
				dropped += it.Dropped
			} else {
				dropped++
			}
		}
		clear(q.items) // let the dropped payloads be collected
		q.items = append(q.items[:0], Event{Type: EventOverflow, Dropped: dropped})
		if q.onDrop != nil {
			q.onDrop(dropped)
		}
	}
	q.items = append(q.items, e)
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take removes and returns every pending event, or nil.
func (q *eventQueue) take() []Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	out := q.items
	q.items = nil
	return out
}

// dispatch moves events from q to out until done is closed, then closes out.
// It is the only sender on out.
func (q *eventQueue) dispatch(out chan<- Event, done <-chan struct{}) {
	defer close(out)
	for {
		select {
		case <-done:
			return
		case <-q.ready:
		}
		for _, e := range q.take() {
			select {
			case out <- e:
			case <-done:
				return
			}
		}
	}
}

// Restarted reports whether an EventDuplicate is one agent's two
// incarnations: both on one gossip address, which two live processes
// cannot share, so the older one has stopped and will be declared failed.
func (e Event) Restarted() bool {
	return e.Type == EventDuplicate && e.Member.GossipAddr == e.Other.GossipAddr
}
