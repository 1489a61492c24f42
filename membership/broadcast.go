package membership

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// A broadcast is gossiped as one memberlist user message, version 1:
//
//	+---------+--------+----------------+---------+
//	| version | kind   | sender id      | seq     |
//	| u8 = 1  | u8     | int32 big-end. | uvarint |
//	+---------+--------+----------------+---------+
//	| name len | sender name | key len | key      | payload          |
//	| u8       | bytes       | u8      | bytes    | the rest         |
//	+----------+-------------+---------+----------+------------------+
//
// kind 1 is a broadcast. Kind 2 is a leave intent, sent over TCP to every
// live member just before a graceful leave, with an empty key and payload:
// memberlist's NotifyLeave does not say whether a node left or failed (its
// Node.State is never set, hashicorp/memberlist#293), so receivers remember
// the intent and report the node's departure as a leave.
//
// (sender name, seq) identifies the message: the sender's node name is
// unique per process start and seq counts up from 1, so receivers drop the
// copies that gossip's retransmissions bring.
const (
	broadcastVersion = 1
	kindBroadcast    = 1
	kindLeave        = 2
	// maxMessageBytes bounds what a receiver accepts: the header, a name and
	// key of 255 bytes each and the largest payload any Config allows.
	// memberlist also delivers messages sent over TCP, which have no packet
	// size to bound them.
	maxMessageBytes = 2 + 4 + binary.MaxVarintLen64 + 1 + 255 + 1 + maxKeyBytes + broadcastMaxBytesLimit
	// dedupWindow is how many recent broadcast ids a receiver remembers.
	// Copies of one broadcast arrive within a few gossip rounds of each
	// other, long before thousands of others have passed.
	dedupWindow = 4096
)

// ErrBroadcastTooLarge is returned by Broadcast for a key longer than 255
// bytes or a key and payload longer than Config.BroadcastMaxBytes.
var ErrBroadcastTooLarge = errors.New("membership: broadcast too large")

var errBadMessage = errors.New("membership: bad gossip message")

// message is one decoded broadcast or leave intent.
type message struct {
	kind       byte
	senderID   int32
	seq        uint64
	senderName string
	key        string
	payload    []byte
}

func encodeMessage(m message) []byte {
	b := make([]byte, 0, 2+4+binary.MaxVarintLen64+2+len(m.senderName)+len(m.key)+len(m.payload))
	b = append(b, broadcastVersion, m.kind)
	b = binary.BigEndian.AppendUint32(b, uint32(m.senderID))
	b = binary.AppendUvarint(b, m.seq)
	b = append(b, byte(len(m.senderName)))
	b = append(b, m.senderName...)
	b = append(b, byte(len(m.key)))
	b = append(b, m.key...)
	return append(b, m.payload...)
}

// decodeMessage parses a user message from the network. It never panics;
// the payload it returns is a copy, since memberlist reuses b.
func decodeMessage(b []byte) (message, error) {
	if len(b) > maxMessageBytes {
		return message{}, fmt.Errorf("%w: %d bytes, more than %d", errBadMessage, len(b), maxMessageBytes)
	}
	if len(b) < 6 {
		return message{}, fmt.Errorf("%w: %d bytes, shorter than the header", errBadMessage, len(b))
	}
	if b[0] != broadcastVersion || (b[1] != kindBroadcast && b[1] != kindLeave) {
		return message{}, fmt.Errorf("%w: version %d kind %d", errBadMessage, b[0], b[1])
	}
	m := message{kind: b[1], senderID: int32(binary.BigEndian.Uint32(b[2:6]))}
	rest := b[6:]
	seq, n := binary.Uvarint(rest)
	if n <= 0 {
		return message{}, fmt.Errorf("%w: sequence number", errBadMessage)
	}
	m.seq = seq
	rest = rest[n:]
	for _, field := range []*string{&m.senderName, &m.key} {
		if len(rest) < 1 || int(rest[0]) > len(rest)-1 {
			return message{}, fmt.Errorf("%w: string field overruns the message", errBadMessage)
		}
		l := int(rest[0])
		*field = string(rest[1 : 1+l])
		rest = rest[1+l:]
	}
	if m.senderName == "" {
		return message{}, fmt.Errorf("%w: no sender name", errBadMessage)
	}
	m.payload = append([]byte(nil), rest...)
	return m, nil
}

// queuedBroadcast is a message in memberlist's TransmitLimitedQueue. It is
// named by its key, so queueing a newer broadcast of one key drops the older
// one if it is still waiting: "X is now at version 7" makes "X is at 6"
// worthless.
type queuedBroadcast struct {
	key string
	msg []byte
}

var _ memberlist.NamedBroadcast = (*queuedBroadcast)(nil)

func (b *queuedBroadcast) Invalidates(other memberlist.Broadcast) bool {
	nb, ok := other.(memberlist.NamedBroadcast)
	return ok && nb.Name() == b.key
}
func (b *queuedBroadcast) Message() []byte { return b.msg }
func (b *queuedBroadcast) Finished()       {}
func (b *queuedBroadcast) Name() string    { return b.key }

// msgID identifies a broadcast for de-duplication.
type msgID struct {
	sender string
	seq    uint64
}

// dedup remembers the last dedupWindow broadcast ids. Not safe for
// concurrent use: the delegate guards it.
type dedup struct {
	seen map[msgID]struct{}
	ring []msgID
	next int
}

func newDedup(window int) *dedup {
	return &dedup{seen: make(map[msgID]struct{}, window), ring: make([]msgID, 0, window)}
}

// first reports whether id has not been seen in the window, and records it.
func (d *dedup) first(id msgID) bool {
	if _, ok := d.seen[id]; ok {
		return false
	}
	if len(d.ring) < cap(d.ring) {
		d.ring = append(d.ring, id)
	} else {
		delete(d.seen, d.ring[d.next])
		d.ring[d.next] = id
		d.next = (d.next + 1) % len(d.ring)
	}
	d.seen[id] = struct{}{}
	return true
}
