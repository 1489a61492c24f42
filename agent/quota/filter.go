package quota

import "fmt"

// Match types of a DescribeClientQuotas filter component (KIP-546).
const (
	MatchExact   int8 = 0 // the component named Match
	MatchDefault int8 = 1 // the type's default entity
	MatchAny     int8 = 2 // any entity of the type, the default included
)

// FilterComponent selects entities by one component type.
type FilterComponent struct {
	Type      string
	MatchType int8
	Match     *string
}

// Filter is a DescribeClientQuotas request: an entity matches when every
// component matches it and, when Strict, it has no component of a type
// the filter does not name. No components and Strict false select every
// entity.
type Filter struct {
	Components []FilterComponent
	Strict     bool
}

// Validate applies Kafka's rules: known types, each at most once, ip
// alone, and a name exactly when matching exactly.
func (f Filter) Validate() error {
	seen := map[string]bool{}
	for _, c := range f.Components {
		switch c.Type {
		case TypeUser, TypeClientID, TypeIP:
		default:
			return fmt.Errorf("%w: unhandled client quota entity type %q in filter", ErrInvalid, c.Type)
		}
		if seen[c.Type] {
			return fmt.Errorf("%w: duplicate %s component in filter", ErrInvalid, c.Type)
		}
		seen[c.Type] = true
		switch c.MatchType {
		case MatchExact:
			if c.Match == nil {
				return fmt.Errorf("%w: exact match of %s needs a name", ErrInvalid, c.Type)
			}
		case MatchDefault, MatchAny:
			if c.Match != nil {
				return fmt.Errorf("%w: match type %d of %s takes no name", ErrInvalid, c.MatchType, c.Type)
			}
		default:
			return fmt.Errorf("%w: unknown match type %d", ErrInvalid, c.MatchType)
		}
	}
	if seen[TypeIP] && len(seen) > 1 {
		return fmt.Errorf("%w: an ip filter component cannot be combined with user or client-id", ErrInvalid)
	}
	return nil
}

// Matches reports whether f selects e.
func (f Filter) Matches(e Entity) bool {
	if f.Strict && len(e) != len(f.Components) {
		return false
	}
	for _, c := range f.Components {
		name, ok := e.Name(c.Type)
		if !ok {
			return false
		}
		switch c.MatchType {
		case MatchExact:
			if name == nil || *name != *c.Match {
				return false
			}
		case MatchDefault:
			if name != nil {
				return false
			}
		}
	}
	return true
}

// Select returns the entries f matches.
func Select(entries []Entry, f Filter) []Entry {
	var out []Entry
	for _, e := range entries {
		if f.Matches(e.Entity) {
			out = append(out, e)
		}
	}
	return out
}
