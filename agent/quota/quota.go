// Package quota is Kafka's client quotas (KIP-13, KIP-55, KIP-124,
// KIP-257, KIP-546, KIP-612) as pure logic: the entities and keys
// AlterClientQuotas accepts and their validation (this file), the filters
// DescribeClientQuotas takes (filter.go), which configured quota applies
// to a request of a given user and client id (resolve.go), and the rate a
// client has used over sampled windows with the throttle time a violation
// earns (rate.go, tracker.go). It does no I/O: the agent stores the
// entries and the Kafka server records and throttles.
//
// An entity is a set of components, each a type ("user", "client-id" or
// "ip") and a name, where a nil name is the type's default entity
// (Kafka's "<default>"). Kafka stores user names sanitized; the names
// here are the names as clients send them.
package quota

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
)

// Entity types.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Quota keys.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ConnectionCreationRate = "connection_creation_rate"
	// ControllerMutationRate is a key Kafka accepts (KIP-599) and Strata
	// refuses: it has no controller request queue to throttle.
	ControllerMutationRate = "controller_mutation_rate"
)

// ErrInvalid wraps every validation failure; the Kafka handlers answer
// INVALID_REQUEST with its message.
var ErrInvalid = errors.New("quota: invalid")

// Component is one part of an entity; a nil Name is the default entity
// of its type.
type Component struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Entity is a set of components of distinct types, kept sorted by type
// (Normalize), so that equal entities compare equal.
type Entity []Component

// Entry is an entity and its configured quotas, by key.
type Entry struct {
	Entity Entity             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// Normalize returns e sorted by type; it does not change e.
func (e Entity) Normalize() Entity {
	out := slices.Clone(e)
	slices.SortFunc(out, func(a, b Component) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// Equal reports whether two entities name the same components.
func (e Entity) Equal(o Entity) bool {
	a, b := e.Normalize(), o.Normalize()
	return slices.EqualFunc(a, b, func(x, y Component) bool {
		return x.Type == y.Type && (x.Name == nil) == (y.Name == nil) && (x.Name == nil || *x.Name == *y.Name)
	})
}

// Name returns the component of type typ and whether e has one.
func (e Entity) Name(typ string) (name *string, ok bool) {
	for _, c := range e {
		if c.Type == typ {
			return c.Name, true
		}
	}
	return nil, false
}

// String is kafka-configs' form: user=alice,client-id=<default>.
func (e Entity) String() string {
	parts := make([]string, len(e))
	for i, c := range e.Normalize() {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		parts[i] = c.Type + "=" + name
	}
	return strings.Join(parts, ",")
}

// ValidateEntity applies Kafka's rules: known types, each at most once,
// an ip entity alone and naming an address.
func ValidateEntity(e Entity) error {
	if len(e) == 0 {
		return fmt.Errorf("%w: empty client quota entity", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, c := range e {
		switch c.Type {
		case TypeUser, TypeClientID:
		case TypeIP:
			if c.Name != nil && net.ParseIP(*c.Name) == nil {
				return fmt.Errorf("%w: %q is not a valid IP address", ErrInvalid, *c.Name)
			}
		default:
			return fmt.Errorf("%w: unhandled client quota entity type %q", ErrInvalid, c.Type)
		}
		if seen[c.Type] {
			return fmt.Errorf("%w: duplicate %s entity component", ErrInvalid, c.Type)
		}
		seen[c.Type] = true
	}
	if seen[TypeIP] && len(e) > 1 {
		return fmt.Errorf("%w: an ip entity cannot be combined with user or client-id", ErrInvalid)
	}
	return nil
}

// ValidateValue checks that key is one e may carry and that value suits
// it: the byte rates and the connection rate are whole numbers, and every
// quota is positive (Kafka accepts 0 and negative values; a quota of 0
// would throttle a client forever, so Strata refuses them).
func ValidateValue(e Entity, key string, value float64) error {
	_, isIP := e.Name(TypeIP)
	integral := false
	switch key {
	case ProducerByteRate, ConsumerByteRate:
		integral = true
	case RequestPercentage:
	case ConnectionCreationRate:
		integral = true
		if !isIP {
			return fmt.Errorf("%w: %s applies to ip entities only", ErrInvalid, key)
		}
	case ControllerMutationRate:
		return fmt.Errorf("%w: %s is not supported: Strata does not throttle topic and partition mutations", ErrInvalid, key)
	default:
		return fmt.Errorf("%w: unknown quota key %q", ErrInvalid, key)
	}
	if isIP && key != ConnectionCreationRate {
		return fmt.Errorf("%w: %s does not apply to ip entities", ErrInvalid, key)
	}
	switch {
	case math.IsNaN(value) || math.IsInf(value, 0):
		return fmt.Errorf("%w: %s must be a number, not %v", ErrInvalid, key, value)
	case integral && (value != math.Trunc(value) || value > math.MaxInt64):
		return fmt.Errorf("%w: %s must be a whole number, not %v", ErrInvalid, key, value)
	case value <= 0:
		return fmt.Errorf("%w: %s must be greater than 0, not %v", ErrInvalid, key, value)
	}
	return nil
}

// Op is one change of an AlterClientQuotas entry: set Key to Value, or
// remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Alteration is one entity's changes.
type Alteration struct {
	Entity Entity
	Ops    []Op
}

// Validate checks the entity and every op; a key may appear once.
func (a Alteration) Validate() error {
	if err := ValidateEntity(a.Entity); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, op := range a.Ops {
		if seen[op.Key] {
			return fmt.Errorf("%w: duplicate quota key %q", ErrInvalid, op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			if !knownKey(op.Key) {
				return fmt.Errorf("%w: unknown quota key %q", ErrInvalid, op.Key)
			}
			continue
		}
		if err := ValidateValue(a.Entity, op.Key, op.Value); err != nil {
			return err
		}
	}
	return nil
}

func knownKey(k string) bool {
	switch k {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage, ConnectionCreationRate, ControllerMutationRate:
		return true
	}
	return false
}

// Apply returns entries with the alterations made, in order: an entity
// whose last key is removed is dropped, as Kafka drops it. entries is not
// changed.
func Apply(entries []Entry, alts []Alteration) []Entry {
	out := make([]Entry, 0, len(entries)+len(alts))
	for _, e := range entries {
		out = append(out, Entry{Entity: e.Entity, Values: cloneValues(e.Values)})
	}
	for _, a := range alts {
		i := slices.IndexFunc(out, func(e Entry) bool { return e.Entity.Equal(a.Entity) })
		if i < 0 {
			out = append(out, Entry{Entity: a.Entity.Normalize(), Values: map[string]float64{}})
			i = len(out) - 1
		}
		for _, op := range a.Ops {
			if op.Remove {
				delete(out[i].Values, op.Key)
			} else {
				out[i].Values[op.Key] = op.Value
			}
		}
	}
	return slices.DeleteFunc(out, func(e Entry) bool { return len(e.Values) == 0 })
}

func cloneValues(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
