package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/memberlist"
)

// State is where an agent is in its life, as the cluster sees it.
type State uint8

// The states carried in node meta. Zero is not a state, so a Member whose
// State was never set fails validation instead of meaning "joining".
const (
	// StateJoining: the agent is up but not yet ready to lead or follow
	// (it is still restoring, registering or catching up).
	StateJoining State = 1
	// StateActive: the agent takes partitions.
	StateActive State = 2
	// StateDraining: the agent is moving its partitions away before it exits;
	// placement gives it nothing new.
	StateDraining State = 3
)

func (s State) String() string {
	switch s {
	case StateJoining:
		return "joining"
	case StateActive:
		return "active"
	case StateDraining:
		return "draining"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

func (s State) valid() bool { return s >= StateJoining && s <= StateDraining }

// ParseState is the inverse of State.String.
func ParseState(s string) (State, error) {
	for _, st := range []State{StateJoining, StateActive, StateDraining} {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("membership: unknown state %q (want joining, active or draining)", s)
}

// Member is one agent as gossip knows it.
//
// The first five fields are what an agent says about itself (Start and
// SetState); the last three are filled in by this package and ignored when
// given to Start.
type Member struct {
	ID        int32  // agent id, >= 0
	KafkaAddr string // advertised Kafka listener, host:port
	HTTPAddr  string // HTTP server (metrics, health), host:port; may be empty
	Rack      string // may be empty
	State     State
	// Listeners are the agent's advertised Kafka listeners by name,
	// "NAME=host:port,NAME=host:port" (--advertised-listeners), so that
	// Metadata can answer a client with the endpoints of the listener it
	// connected on; empty for an agent with only --kafka-addr. A string
	// keeps Member comparable.
	Listeners string

	// Name is the memberlist node name, "agent-<id>-<8 hex digits>": unique
	// per process start, so a restarted agent is a new node and never
	// mistaken for its old incarnation while that one is being failed.
	Name string
	// GossipAddr is the advertised gossip address, ip:port.
	GossipAddr string
	// Started is when the process started its membership, to the
	// millisecond. Of two members claiming one id the later Started is the
	// newer incarnation.
	Started time.Time
}

// MetaMaxBytes is memberlist's limit on node meta; Start and SetState refuse
// a Member whose encoding is longer.
const MetaMaxBytes = memberlist.MetaMaxSize

// metaVersion is the version byte written in node meta.
const metaVersion = 2

// ErrMetaTooLarge is returned (wrapped) by Start and SetState when the
// encoded member does not fit in MetaMaxBytes.
var ErrMetaTooLarge = errors.New("membership: node meta too large")

// errBadMeta is wrapped by decodeMeta for every malformed input.
var errBadMeta = errors.New("membership: bad node meta")

// validateSelf checks the fields an agent sets about itself.
func (m Member) validateSelf() error {
	switch {
	case m.ID < 0:
		return fmt.Errorf("membership: agent id %d: must not be negative", m.ID)
	case !m.State.valid():
		return fmt.Errorf("membership: agent %d: state %v: want joining, active or draining", m.ID, m.State)
	case m.KafkaAddr == "":
		return fmt.Errorf("membership: agent %d: empty Kafka address", m.ID)
	}
	return nil
}

// encodeMeta lays out m as node meta, version 2:
//
//	+---------+-------+----------------+--------------------+
//	| version | state | agent id       | started            |
//	| u8 = 1  | u8    | int32 big-end. | uvarint, unix ms   |
//	+---------+-------+----------------+--------------------+
//	| kafka addr          | http addr           | rack                |
//	| uvarint len + bytes | uvarint len + bytes | uvarint len + bytes |
//	+---------------------+---------------------+---------------------+
//	| listeners (version 2 on) |
//	| uvarint len + bytes      |
//	+--------------------------+
//
// Later versions only append fields, so a reader parses the fields it knows
// and ignores the bytes after them. Name and GossipAddr are not encoded:
// memberlist carries them.
func encodeMeta(m Member) ([]byte, error) {
	if err := m.validateSelf(); err != nil {
		return nil, err
	}
	ms := m.Started.UnixMilli()
	if ms < 0 {
		return nil, fmt.Errorf("membership: agent %d: start time %v before 1970", m.ID, m.Started)
	}
	n := 6 + binary.MaxVarintLen64 + 4*binary.MaxVarintLen64 + len(m.KafkaAddr) + len(m.HTTPAddr) + len(m.Rack) + len(m.Listeners)
	b := make([]byte, 0, n)
	b = append(b, metaVersion, byte(m.State))
	b = binary.BigEndian.AppendUint32(b, uint32(m.ID))
	b = binary.AppendUvarint(b, uint64(ms))
	for _, s := range []string{m.KafkaAddr, m.HTTPAddr, m.Rack, m.Listeners} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if len(b) > MetaMaxBytes {
		return nil, fmt.Errorf("%w: agent %d encodes to %d bytes, the limit is %d "+
			"(Kafka address %d bytes, HTTP address %d, rack %d, listeners %d): shorten them",
			ErrMetaTooLarge, m.ID, len(b), MetaMaxBytes, len(m.KafkaAddr), len(m.HTTPAddr), len(m.Rack), len(m.Listeners))
	}
	return b, nil
}

// decodeMeta parses node meta from the network. It never panics and does
// not keep b.
func decodeMeta(b []byte) (Member, error) {
	if len(b) > MetaMaxBytes {
		return Member{}, fmt.Errorf("%w: %d bytes, more than %d", errBadMeta, len(b), MetaMaxBytes)
	}
	if len(b) < 6 {
		return Member{}, fmt.Errorf("%w: %d bytes, shorter than the fixed header", errBadMeta, len(b))
	}
	if b[0] < 1 {
		return Member{}, fmt.Errorf("%w: version %d", errBadMeta, b[0])
	}
	m := Member{State: State(b[1]), ID: int32(binary.BigEndian.Uint32(b[2:6]))}
	if !m.State.valid() {
		return Member{}, fmt.Errorf("%w: unknown state %d", errBadMeta, b[1])
	}
	if m.ID < 0 {
		return Member{}, fmt.Errorf("%w: negative agent id %d", errBadMeta, m.ID)
	}
	rest := b[6:]
	ms, n := binary.Uvarint(rest)
	if n <= 0 || ms > math.MaxInt64 {
		return Member{}, fmt.Errorf("%w: start time", errBadMeta)
	}
	m.Started = time.UnixMilli(int64(ms))
	rest = rest[n:]
	fields := []*string{&m.KafkaAddr, &m.HTTPAddr, &m.Rack}
	if b[0] >= 2 {
		fields = append(fields, &m.Listeners)
	}
	for _, field := range fields {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return Member{}, fmt.Errorf("%w: string field overruns the meta", errBadMeta)
		}
		*field = string(rest[n : n+int(l)])
		rest = rest[n+int(l):]
	}
	// Bytes left over belong to fields of a newer version.
	return m, nil
}
