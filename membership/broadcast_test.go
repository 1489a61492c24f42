package membership

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range []message{
		{kind: kindBroadcast, senderID: 0, seq: 1, senderName: "agent-0-00000000", key: "k"},
		{kind: kindLeave, senderID: 3, seq: 9, senderName: "agent-3-00000000"},
		{kind: kindBroadcast, senderID: 7, seq: 1 << 40, senderName: "agent-7-deadbeef", key: "topics/abc/3/state.json", payload: []byte("v=12")},
		{kind: kindBroadcast, senderID: 2147483647, seq: 3, senderName: strings.Repeat("n", 255), key: strings.Repeat("k", 255), payload: bytes.Repeat([]byte{0}, broadcastMaxBytesLimit)},
	} {
		b := encodeMessage(m)
		if len(b) > maxMessageBytes {
			t.Fatalf("%d bytes, more than maxMessageBytes %d", len(b), maxMessageBytes)
		}
		got, err := decodeMessage(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if got.kind != m.kind || got.senderID != m.senderID || got.seq != m.seq || got.senderName != m.senderName || got.key != m.key || !bytes.Equal(got.payload, m.payload) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
		// The payload must not alias memberlist's buffer.
		if len(b) > 0 && len(got.payload) > 0 {
			b[len(b)-1] ^= 0xff
			if got.payload[len(got.payload)-1] == b[len(b)-1] {
				t.Fatal("decoded payload aliases the input")
			}
		}
	}
}

func TestMessageDecodeRejects(t *testing.T) {
	good := encodeMessage(message{kind: kindBroadcast, senderID: 1, seq: 2, senderName: "agent-1-x", key: "k", payload: []byte("p")})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"short":         good[:5],
		"version 2":     append([]byte{2}, good[1:]...),
		"kind 0":        append([]byte{1, 0}, good[2:]...),
		"kind 3":        append([]byte{1, 3}, good[2:]...),
		"no seq":        good[:6],
		"name overruns": append(append([]byte{}, good[:7]...), 200, 'a'),
		"no key length": good[:7+1+len("agent-1-x")],
		"empty name":    append(append([]byte{}, good[:7]...), 0, 1, 'k'),
		"too long":      make([]byte, maxMessageBytes+1),
	} {
		if m, err := decodeMessage(b); !errors.Is(err, errBadMessage) {
			t.Errorf("%s: decode %x = %+v, %v; want errBadMessage", name, b, m, err)
		}
	}
}

func TestDedup(t *testing.T) {
	d := newDedup(3)
	ids := []msgID{{"a", 1}, {"a", 2}, {"b", 1}}
	for _, id := range ids {
		if !d.first(id) {
			t.Fatalf("%v seen before it was", id)
		}
	}
	for _, id := range ids {
		if d.first(id) {
			t.Fatalf("%v not recognised as a copy", id)
		}
	}
	// A fourth id pushes the oldest out of the window.
	if !d.first(msgID{"c", 1}) {
		t.Fatal("new id seen before")
	}
	if !d.first(msgID{"a", 1}) {
		t.Fatal("the oldest id is still remembered past the window")
	}
	if d.first(msgID{"c", 1}) {
		t.Fatal("a recent id was forgotten")
	}
	if len(d.seen) != 3 || len(d.ring) != 3 {
		t.Fatalf("window holds %d/%d ids, want 3", len(d.seen), len(d.ring))
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(encodeMessage(message{kind: kindBroadcast, senderID: 1, seq: 2, senderName: "agent-1-x", key: "k", payload: []byte("p")}))
	f.Add(encodeMessage(message{kind: kindLeave, senderID: 0, seq: 1, senderName: "n", key: ""}))
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			return
		}
		m2, err := decodeMessage(encodeMessage(m))
		if err != nil || m2.kind != m.kind || m2.senderID != m.senderID || m2.seq != m.seq || m2.senderName != m.senderName ||
			m2.key != m.key || !bytes.Equal(m2.payload, m.payload) {
			t.Fatalf("re-encoding changed %+v into %+v (%v)", m, m2, err)
		}
	})
}

// TestBroadcastQueueKeepsReplacement: a broadcast that replaces the only
// queued one of its key is sent, whatever is queued after it. memberlist
// v0.6.0's queue reset its id counter when the replacement emptied it, so
// the broadcast queued second after it took the same id and, being as long
// and as unsent, the same place in the queue's B-tree: one of the two was
// dropped unsent. memberlist's own alive, suspect and dead messages go
// through the same queue; third_party/memberlist/STRATA.md.
func TestBroadcastQueueKeepsReplacement(t *testing.T) {
	q := &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 3 }, RetransmitMult: 3}
	msg := func(key, payload string) *queuedBroadcast {
		return &queuedBroadcast{key: key, msg: encodeMessage(message{kind: kindBroadcast, senderID: 1, seq: 1,
			senderName: "agent-1-00000000", key: key, payload: []byte(payload)})}
	}
	q.QueueBroadcast(msg("a", "v=1"))
	q.QueueBroadcast(msg("a", "v=2")) // replaces the only queued broadcast
	q.QueueBroadcast(msg("b", "v=1"))
	q.QueueBroadcast(msg("c", "v=1")) // as long as "a" v=2, queued second after it
	var got []string
	for _, b := range q.GetBroadcasts(0, 1<<16) {
		m, err := decodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.key+" "+string(m.payload))
	}
	slices.Sort(got)
	if want := []string{"a v=2", "b v=1", "c v=1"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}
