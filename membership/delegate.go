package membership

import (
	"context"
	"log/slog"
	"sync"

	"github.com/hashicorp/memberlist"
)

// delegate receives memberlist's callbacks. memberlist calls them from its
// own goroutines, the event ones while it holds its node lock, so none of
// them blocks and none calls back into memberlist: they update the view and
// queue events, nothing more.
//
// Lock order: memberlist's node lock, then delegate.mu. metaMu is a leaf.
type delegate struct {
	logger     *slog.Logger
	queue      *eventQueue
	broadcasts *memberlist.TransmitLimitedQueue
	// onFirstPeer is called, without blocking, when a member other than
	// this node appears in a view that had none: it wakes the joiner.
	onFirstPeer func()

	metaMu sync.Mutex
	meta   []byte // this node's encoded meta; replaced, never modified

	mu      sync.Mutex
	view    *view
	dedup   *dedup
	badMeta map[string]struct{} // nodes whose bad meta was already logged
}

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
)

// badMetaLogLimit bounds the set of nodes whose bad meta was logged; past it
// the set starts over (and a node may be logged again).
const badMetaLogLimit = 1024

func newDelegate(self string, meta []byte, logger *slog.Logger, queue *eventQueue, bq *memberlist.TransmitLimitedQueue,
	onFirstPeer func()) *delegate {
	return &delegate{
		logger:      logger,
		queue:       queue,
		broadcasts:  bq,
		onFirstPeer: onFirstPeer,
		meta:        meta,
		view:        newView(self),
		dedup:       newDedup(dedupWindow),
		badMeta:     make(map[string]struct{}),
	}
}

func (d *delegate) setMeta(meta []byte) {
	d.metaMu.Lock()
	d.meta = meta
	d.metaMu.Unlock()
}

// NodeMeta returns this node's meta; its length was checked against the
// limit when it was encoded.
func (d *delegate) NodeMeta(limit int) []byte {
	d.metaMu.Lock()
	defer d.metaMu.Unlock()
	if len(d.meta) > limit {
		// encodeMeta refuses meta over MetaMaxBytes, which is the only limit
		// memberlist passes.
		panic("membership: node meta over memberlist's limit")
	}
	return d.meta
}

// NotifyMsg receives a broadcast or a leave intent from another node.
func (d *delegate) NotifyMsg(b []byte) {
	msg, err := decodeMessage(b)
	if err != nil {
		d.logger.Debug("gossip message dropped", "err", err, "bytes", len(b))
		return
	}
	d.mu.Lock()
	if msg.senderName == d.view.self || !d.dedup.first(msgID{msg.senderName, msg.seq}) {
		d.mu.Unlock()
		return
	}
	if msg.kind == kindLeave {
		d.view.markLeaving(msg.senderName)
		d.mu.Unlock()
		return
	}
	sender, ok := d.view.members[msg.senderName]
	d.mu.Unlock()
	if !ok {
		sender = Member{ID: msg.senderID, Name: msg.senderName}
	}
	d.queue.push(Event{Type: EventBroadcast, Member: sender, Key: msg.key, Payload: msg.payload})
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.broadcasts.GetBroadcasts(overhead, limit)
}

// LocalState and MergeRemoteState carry nothing: the store holds the state,
// gossip only hints at changes to it.
func (d *delegate) LocalState(join bool) []byte            { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyAlive keeps nodes whose meta does not decode (not Strata agents, or
// of an incompatible version) out of the member list altogether.
func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	if _, err := decodeMeta(n.Meta); err != nil {
		d.mu.Lock()
		_, logged := d.badMeta[n.Name]
		if !logged {
			if len(d.badMeta) >= badMetaLogLimit {
				clear(d.badMeta)
			}
			d.badMeta[n.Name] = struct{}{}
		}
		d.mu.Unlock()
		if !logged {
			d.logger.Warn("ignoring gossip node with bad meta", "node", n.Name, "addr", n.Address(), "err", err)
		}
		return err
	}
	return nil
}

func (d *delegate) NotifyJoin(n *memberlist.Node)   { d.upsert(EventJoin, n) }
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.upsert(EventUpdate, n) }

func (d *delegate) upsert(t EventType, n *memberlist.Node) {
	m, err := memberFromNode(n)
	if err != nil {
		// NotifyAlive let only decodable meta through.
		d.logger.Error("gossip node with bad meta got past the alive check", "node", n.Name, "err", err)
		return
	}
	d.mu.Lock()
	first := !d.view.hasOther() && m.Name != d.view.self
	evs := d.view.upsert(t, m)
	d.mu.Unlock()
	d.deliver(evs)
	if first {
		d.onFirstPeer()
	}
}

func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.mu.Lock()
	// n.State does not tell a leave from a failure in memberlist v0.6.0
	// (hashicorp/memberlist#293); the view remembers leave intents instead.
	evs := d.view.remove(n.Name)
	d.mu.Unlock()
	d.deliver(evs)
}

func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	// Node names carry a random suffix, so this takes two processes that
	// drew the same one, or a node that changed its address.
	d.logger.Error("two gossip nodes with one name", "node", existing.Name,
		"addr", existing.Address(), "other_addr", other.Address())
}

func (d *delegate) deliver(evs []Event) {
	for _, e := range evs {
		m := e.Member
		switch e.Type {
		case EventJoin, EventUpdate, EventLeave:
			d.logger.Info("member "+e.Type.String(), "agent_id", m.ID, "node", m.Name, "state", m.State.String(),
				"gossip_addr", m.GossipAddr, "kafka_addr", m.KafkaAddr, "http_addr", m.HTTPAddr, "rack", m.Rack)
		case EventFail:
			d.logger.Warn("member failed", "agent_id", m.ID, "node", m.Name, "gossip_addr", m.GossipAddr)
		case EventDuplicate:
			msg, level := "two live members claim one agent id: two agents share an --agent-id, or one restarted on another address before its old incarnation failed", slog.LevelError
			if e.Restarted() {
				msg, level = "an agent restarted before its old incarnation was declared failed", slog.LevelInfo
			}
			d.logger.Log(context.Background(), level, msg,
				"agent_id", m.ID, "node", m.Name, "gossip_addr", m.GossipAddr, "started", m.Started,
				"other_node", e.Other.Name, "other_gossip_addr", e.Other.GossipAddr, "other_started", e.Other.Started)
		}
		d.queue.push(e)
	}
}

// memberFromNode decodes a memberlist node into a Member.
func memberFromNode(n *memberlist.Node) (Member, error) {
	m, err := decodeMeta(n.Meta)
	if err != nil {
		return Member{}, err
	}
	m.Name = n.Name
	m.GossipAddr = n.Address()
	return m, nil
}
