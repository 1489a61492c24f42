package quota

import "net/netip"

// Which configured quota applies to a client, as Kafka's default quota
// callback decides it (docs: "Quotas", precedence). For each key on its
// own, the first of these entities that carries it wins:
//
//	1. user=U, client-id=C          5. user=<default>, client-id=<default>
//	2. user=U, client-id=<default>  6. user=<default>
//	3. user=U                       7. client-id=C
//	4. user=<default>, client-id=C  8. client-id=<default>
//
// The winner also says who shares the rate: a quota of an entity with a
// user component is metered per user, with a client-id component per
// client id, so user=U alone caps all of U's clients together, while a
// default entity caps each user (or client) on its own.

// Set is a read-only index of the configured entries, built once per
// change and shared by every request.
type Set struct {
	entries []Entry
	byKey   map[string]map[string]float64 // by entityKey
}

// NewSet indexes entries; it keeps the slice, which the caller must not
// change afterwards.
func NewSet(entries []Entry) *Set {
	s := &Set{entries: entries, byKey: make(map[string]map[string]float64, len(entries))}
	for _, e := range entries {
		s.byKey[entityKey(e.Entity)] = e.Values
	}
	return s
}

// Entries returns every configured entry; the caller must not change them.
func (s *Set) Entries() []Entry {
	if s == nil {
		return nil
	}
	return s.entries
}

// Empty reports whether no quota is configured, so requests skip the
// lookup.
func (s *Set) Empty() bool { return s == nil || len(s.entries) == 0 }

// Bound is the quota that applies to a client for one key, and the
// sensor (Metered) whose rate is held to it.
type Bound struct {
	Limit   float64
	Metered Metered
}

// Metered names the clients that share one rate: User and ClientID are
// empty when the winning entity has no such component.
type Metered struct {
	Key      string
	User     string
	ClientID string
}

// Resolve returns the bound of key for a request from user (the
// principal's name, "ANONYMOUS" unauthenticated) with clientID, and false
// when no entity configures key for it.
func (s *Set) Resolve(key, user, clientID string) (Bound, bool) {
	if s.Empty() {
		return Bound{}, false
	}
	u, c := &user, &clientID
	candidates := [...]struct {
		user, client *string
		hasU, hasC   bool
	}{
		{u, c, true, true},
		{u, nil, true, true},
		{u, nil, true, false},
		{nil, c, true, true},
		{nil, nil, true, true},
		{nil, nil, true, false},
		{nil, c, false, true},
		{nil, nil, false, true},
	}
	for _, cand := range candidates {
		var e Entity
		if cand.hasC {
			e = append(e, Component{Type: TypeClientID, Name: cand.client})
		}
		if cand.hasU {
			e = append(e, Component{Type: TypeUser, Name: cand.user})
		}
		v, ok := s.byKey[entityKey(e)][key]
		if !ok {
			continue
		}
		m := Metered{Key: key}
		if cand.hasU {
			m.User = user
		}
		if cand.hasC {
			m.ClientID = clientID
		}
		return Bound{Limit: v, Metered: m}, true
	}
	return Bound{}, false
}

// ResolveIP returns the connection_creation_rate of an address: its own
// entity, else the default ip entity.
func (s *Set) ResolveIP(ip string) (float64, bool) {
	if s.Empty() {
		return 0, false
	}
	if v, ok := s.byKey[entityKey(Entity{{Type: TypeIP, Name: &ip}})][ConnectionCreationRate]; ok {
		return v, true
	}
	v, ok := s.byKey[entityKey(Entity{{Type: TypeIP}})][ConnectionCreationRate]
	return v, ok
}

// entityKey is a map key for e: its sorted components, each name
// length-prefixed and a default one marked apart, so that no name can
// pass for another or for the default.
func entityKey(e Entity) string {
	var b []byte
	for _, c := range e.Normalize() {
		b = append(b, c.Type...)
		b = append(b, 0)
		if c.Name == nil {
			b = append(b, 'D', 0)
			continue
		}
		n := *c.Name
		if a, err := netip.ParseAddr(n); err == nil && c.Type == TypeIP {
			n = a.Unmap().String() // ::ffff:10.0.0.1 is 10.0.0.1
		}
		b = append(b, 'N')
		b = appendLen(b, len(n))
		b = append(b, n...)
	}
	return string(b)
}

func appendLen(b []byte, n int) []byte {
	for {
		b = append(b, byte('0'+n%10))
		n /= 10
		if n == 0 {
			return append(b, ':')
		}
	}
}
