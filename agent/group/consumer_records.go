package group

// KIP-848 groups in __consumer_offsets, in Kafka's record schemas (key
// version = record type; values flexible, version 0):
//
//	3 ConsumerGroupMetadata               group       -> group epoch
//	5 ConsumerGroupMemberMetadata         group, id   -> instance, rack, client id and host,
//	                                                     subscribed names and regex,
//	                                                     rebalance timeout, server assignor
//	6 ConsumerGroupTargetAssignmentMetadata group     -> assignment epoch
//	7 ConsumerGroupTargetAssignmentMember group, id   -> target partitions
//	8 ConsumerGroupCurrentMemberAssignment group, id  -> member epoch, previous epoch,
//	                                                     state, assigned and revoking partitions
//
// Kafka's type 4 (partition metadata, deprecated in Kafka 4.1) is not
// written; Strata recomputes it from the topics on load. The coordinator
// keeps what it last wrote of each record (consumerGroup.stored) and, after
// a change, writes only the records whose value differs and tombstones for
// the ones that are gone, as Kafka writes deltas.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Record types of KIP-848 groups (their key versions).
const (
	cgMetadataKey        = 3
	cgMemberMetadataKey  = 5
	cgTargetMetadataKey  = 6
	cgTargetMemberKey    = 7
	cgCurrentAssignKey   = 8
	firstConsumerKeyType = cgMetadataKey
	lastConsumerKeyType  = cgCurrentAssignKey
)

// consumerKey encodes a non-flexible key: its type, then strings.
func consumerKey(kind int16, group string, member ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(kind))
	for _, s := range append([]string{group}, member...) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	return b
}

// flex builds a flexible (compact) value of version 0.
type flex struct{ b []byte }

func newFlex() *flex             { return &flex{b: []byte{0, 0}} }
func (f *flex) int8(v int8)      { f.b = append(f.b, byte(v)) }
func (f *flex) int32(v int32)    { f.b = binary.BigEndian.AppendUint32(f.b, uint32(v)) }
func (f *flex) uvarint(v uint64) { f.b = binary.AppendUvarint(f.b, v) }
func (f *flex) str(s string)     { f.uvarint(uint64(len(s)) + 1); f.b = append(f.b, s...) }
func (f *flex) done() []byte     { f.uvarint(0); return f.b } // no tagged fields
func (f *flex) nullable(s string) { // "" is written as null
	if s == "" {
		f.uvarint(0)
		return
	}
	f.str(s)
}

func (f *flex) strings(ss []string) {
	f.uvarint(uint64(len(ss)) + 1)
	for _, s := range ss {
		f.str(s)
	}
}

// partitions writes a []TopicPartitions: topic id, partitions, tags.
func (f *flex) partitions(s partSet) {
	a := s.assignment()
	ids := slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	f.uvarint(uint64(len(ids)) + 1)
	for _, id := range ids {
		f.b = append(f.b, id[:]...)
		f.uvarint(uint64(len(a[id])) + 1)
		for _, p := range a[id] {
			f.int32(p)
		}
		f.uvarint(0)
	}
}

// groupRecordsLocked adds the group-level records of cg to out.
func groupRecordsLocked(name string, cg *consumerGroup, out map[string][]byte) {
	v := newFlex()
	v.int32(cg.epoch)
	out[string(consumerKey(cgMetadataKey, name))] = v.done()
	v = newFlex()
	v.int32(cg.assignmentEpoch)
	out[string(consumerKey(cgTargetMetadataKey, name))] = v.done()
}

// memberRecordsLocked adds member id's three records to out.
func memberRecordsLocked(name string, cg *consumerGroup, id string, out map[string][]byte) {
	m := cg.members[id]
	v := newFlex()
	v.nullable(m.instanceID)
	v.nullable(m.rackID)
	v.str(m.clientID)
	v.str(m.clientHost)
	v.strings(m.topics)
	v.nullable(m.regex)
	v.int32(int32(m.rebalanceTimeout.Milliseconds()))
	v.nullable(m.assignor)
	out[string(consumerKey(cgMemberMetadataKey, name, id))] = v.done()

	v = newFlex()
	v.partitions(cg.target[id])
	out[string(consumerKey(cgTargetMemberKey, name, id))] = v.done()

	v = newFlex()
	v.int32(m.epoch) // -2 for a static member that left, as in Kafka
	v.int32(m.previousEpoch)
	v.int8(int8(m.state))
	v.partitions(m.assigned)
	v.partitions(m.revoking)
	out[string(consumerKey(cgCurrentAssignKey, name, id))] = v.done()
}

// consumerDeltaLocked is the records that bring what was stored of group
// name to cg: every record that changed, and tombstones for what is gone
// (all of it when cg is nil). With only set, only the group-level records
// and that member's are looked at (see storeConsumerLocked).
func consumerDeltaLocked(name string, cg *consumerGroup, stored map[string][]byte, only string) (recs []batch.Record, now map[string][]byte) {
	now = map[string][]byte{}
	if cg != nil {
		groupRecordsLocked(name, cg, now)
		for id := range cg.members {
			if only == "" || id == only {
				memberRecordsLocked(name, cg, id, now)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if old, ok := stored[k]; !ok || string(old) != string(now[k]) {
			recs = append(recs, batch.Record{Key: []byte(k), Value: now[k]})
		}
	}
	if only != "" {
		return recs, now
	}
	// Tombstones in Kafka's order for a member: current assignment,
	// target, metadata (descending type), so a partial replay never
	// holds an assignment without its member.
	gone := slices.Collect(func(yield func(string) bool) {
		for k := range stored {
			if _, ok := now[k]; !ok && !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(gone, func(a, b string) int { return -compareKeys(a, b) })
	for _, k := range gone {
		recs = append(recs, batch.Record{Key: []byte(k)})
	}
	return recs, now
}

func compareKeys(a, b string) int {
	if a[:2] != b[:2] {
		return int(a[1]) - int(b[1])
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// storeConsumerLocked makes g's KIP-848 state durable: the records that
// changed since the last store, in one batch. c.mu is held during the
// append, as for commits. A heartbeat changes only its own member unless
// the group's epochs or members changed, so with only (the member that
// heartbeated) and neither changed, only its records are compared: a
// heartbeat costs one member's records, not the group's.
func (c *Coordinator) storeConsumerLocked(g *groupState, only *cmember) error {
	id := ""
	if only != nil && g.cg != nil && !g.consumerMembersChanged() {
		id = only.id
	}
	recs, now := consumerDeltaLocked(g.name, g.cg, g.consumerStored, id)
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeGroupTimeout)
	defer cancel()
	if err := c.writeLocked(ctx, nil, recs...); err != nil {
		return fmt.Errorf("group: store the state of %q: %w", g.name, err)
	}
	if id == "" {
		g.consumerStored, g.consumerStoredMembers = now, 0
		if g.cg != nil {
			g.consumerStoredMembers = len(g.cg.members)
		}
		return nil
	}
	maps.Copy(g.consumerStored, now)
	return nil
}

// consumerMembersChanged reports whether g's KIP-848 members are not the
// ones last stored.
func (g *groupState) consumerMembersChanged() bool {
	if g.consumerStored == nil || len(g.cg.members) != g.consumerStoredMembers {
		return true
	}
	for id := range g.cg.members {
		if _, ok := g.consumerStored[string(consumerKey(cgMemberMetadataKey, g.name, id))]; !ok {
			return true
		}
	}
	return false
}

// consumerTombstones deletes every KIP-848 record stored of g (the group
// is deleted, expired, or becomes a classic group); the caller writes
// them and then forgets g.consumerStored.
func consumerTombstones(g *groupState) []batch.Record {
	recs, _ := consumerDeltaLocked(g.name, nil, g.consumerStored, "")
	return recs
}

// storeConsumerInBackgroundLocked stores g for a change no request waits
// for (a session or revocation timed out); a failure is logged, and the
// next store writes what this one missed.
func (c *Coordinator) storeConsumerInBackgroundLocked(g *groupState) {
	if err := c.storeConsumerLocked(g, nil); err != nil && !errors.Is(err, ErrClosed) {
		c.logger.Warn("group state not stored", "group", g.name, "err", err)
	}
}

// consumerRecord is one replayed KIP-848 record.
type consumerRecord struct {
	kind   int16
	member string
	value  []byte // nil: tombstone
}

// decodeConsumerKey reads a key of kind (types 3 to 8).
func decodeConsumerKey(kind int16, key []byte) (group, member string, err error) {
	rest := key[2:]
	readString := func() (string, error) {
		if len(rest) < 2 {
			return "", fmt.Errorf("group: key of type %d is short", kind)
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return "", fmt.Errorf("group: key of type %d is short", kind)
		}
		s := string(rest[2 : 2+n])
		rest = rest[2+n:]
		return s, nil
	}
	if group, err = readString(); err != nil {
		return "", "", err
	}
	if kind != cgMetadataKey && kind != cgTargetMetadataKey && kind != 4 {
		member, err = readString()
	}
	return group, member, err
}

// flexReader reads a flexible value written by flex (or by Kafka).
type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail() { r.err = errors.New("group: KIP-848 record value is short or malformed") }

func (r *flexReader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *flexReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *flexReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// length reads a compact length: -1 for null.
func (r *flexReader) length() int {
	n := r.uvarint()
	if n > uint64(len(r.b))+1 {
		r.fail()
		return -1
	}
	return int(n) - 1
}

func (r *flexReader) str() string {
	n := r.length()
	if n < 0 {
		return ""
	}
	return string(r.take(n))
}

func (r *flexReader) strings() []string {
	n := r.length()
	var out []string
	for range max(n, 0) {
		out = append(out, r.str())
	}
	return out
}

// tags skips tagged fields.
func (r *flexReader) tags() {
	for range r.uvarint() {
		r.uvarint()
		r.take(int(r.uvarint()))
	}
}

func (r *flexReader) partitions() partSet {
	s := partSet{}
	n := r.length()
	for range max(n, 0) {
		var id [16]byte
		copy(id[:], r.take(16))
		for range max(r.length(), 0) {
			s[topicPart{id, r.int32()}] = struct{}{}
		}
		r.tags()
	}
	return s
}

// replayConsumer applies one replayed KIP-848 record to the group's
// state; finishConsumerLoadLocked completes it once the partition is read.
func (c *Coordinator) replayConsumer(group string, rec consumerRecord) error {
	g := c.group(group)
	if g.consumerStored == nil {
		g.consumerStored = map[string][]byte{}
	}
	key := string(consumerKey(rec.kind, group, memberOf(rec)...))
	if rec.value == nil {
		delete(g.consumerStored, key)
	} else {
		g.consumerStored[key] = rec.value
	}
	if g.cg == nil {
		if rec.value == nil {
			return nil
		}
		g.cg = newConsumerGroup()
		g.cg.restored = true
	}
	cg := g.cg
	m := cg.members[rec.member]
	if rec.value == nil {
		switch rec.kind {
		case cgMetadataKey:
			// The group was deleted (or became a classic group).
			g.cg, g.kept = nil, g.usesClassic()
		case cgMemberMetadataKey:
			delete(cg.members, rec.member)
		case cgTargetMemberKey:
			delete(cg.target, rec.member)
		case cgCurrentAssignKey:
			if m != nil {
				m.assigned, m.revoking = partSet{}, partSet{}
			}
		}
		return nil
	}
	if len(rec.value) < 2 || binary.BigEndian.Uint16(rec.value) != 0 {
		return fmt.Errorf("group: KIP-848 record of type %d: value version is not 0", rec.kind)
	}
	r := &flexReader{b: rec.value[2:]}
	if rec.kind != cgMetadataKey && rec.kind != cgTargetMetadataKey && m == nil {
		m = &cmember{id: rec.member, assigned: partSet{}, revoking: partSet{}, assignedAt: map[topicPart]int32{}}
		cg.members[rec.member] = m
	}
	switch rec.kind {
	case cgMetadataKey:
		cg.epoch = r.int32()
		g.kept = true
	case cgTargetMetadataKey:
		cg.assignmentEpoch = r.int32()
	case cgMemberMetadataKey:
		m.instanceID, m.rackID = r.str(), r.str()
		m.clientID, m.clientHost = r.str(), r.str()
		m.topics = r.strings()
		m.regex = r.str()
		m.rebalanceTimeout = time.Duration(r.int32()) * time.Millisecond
		m.assignor = r.str()
	case cgTargetMemberKey:
		cg.target[rec.member] = r.partitions()
	case cgCurrentAssignKey:
		m.epoch, m.previousEpoch = r.int32(), r.int32()
		m.state = memberState(r.int8())
		m.assigned, m.revoking = r.partitions(), r.partitions()
	}
	r.tags()
	return r.err
}

func memberOf(rec consumerRecord) []string {
	if rec.kind == cgMetadataKey || rec.kind == cgTargetMetadataKey {
		return nil
	}
	return []string{rec.member}
}

// finishConsumerLoadLocked derives what the records do not hold for each
// restored KIP-848 group (static instances, holders, regexes, the
// subscription the target was computed from) and starts each member's
// session, as a new coordinator does in Kafka.
func (c *Coordinator) finishConsumerLoadLocked(g *groupState) {
	cg := g.cg
	if cg == nil || !cg.restored {
		return
	}
	for id, m := range cg.members {
		if m.state > memberUnreleased {
			m.state = memberStable
		}
		m.left = m.epoch == epochStaticLeft
		if m.instanceID != "" {
			cg.static[m.instanceID] = id
		}
		if m.regex != "" {
			m.re, _ = regexp.Compile("^(?:" + m.regex + ")$")
		}
		for tp := range m.assigned {
			cg.holders[tp] = id
			m.assignedAt[tp] = m.epoch
		}
		for tp := range m.revoking {
			cg.holders[tp] = id
		}
		if cg.target[id] == nil {
			cg.target[id] = partSet{}
		}
		c.touchConsumerLocked(g, m)
		if m.state == memberUnrevoked {
			c.startRevokeTimerLocked(g, m)
		}
	}
	cg.assignor = cg.chooseAssignor()
	cg.subscribed = c.subscriptionKeyLocked(cg, c.now())
	g.consumerStoredMembers = len(cg.members)
}
