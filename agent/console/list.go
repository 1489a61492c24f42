package console

// Pages of the view (issue 32): a cluster of thousands of topics is
// gathered once (GET /v1/console reuses one gathering for a second), and
// each request keeps the part it asks for: the topics and groups whose
// names contain q, a window of each list, and a total so that the page
// can say "101–200 of 4,213" and offer the next window. ParseSelection
// reads the request's parameters; Select and the detail functions below
// take a built View and return another, sharing its slices' elements
// read-only, so that a cached View serves any number of requests.

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

const (
	// DefaultListLimit is how many topics, and how many groups, one
	// answer lists when the request does not say.
	DefaultListLimit = 100
	// MaxListLimit bounds topics_limit and groups_limit, and the replicas
	// an agent's page lists.
	MaxListLimit = 1000
	// MaxQueryBytes bounds q.
	MaxQueryBytes = 1024
)

// Selection is what part of the view a request asks for.
type Selection struct {
	// Query keeps the topics and groups whose names contain it, ignoring
	// case; "" keeps every one.
	Query string
	// HideInternal leaves internal topics (__consumer_offsets, ...) out.
	HideInternal bool
	Topics       Window
	Groups       Window
	// MayDescribe, when set, keeps only the topics and groups the
	// caller may describe (DESCRIBE on the topic or group, as the
	// authorizer says for a console session's principal), and the moves
	// of those topics. Nil keeps every one.
	MayDescribe *Describer
}

// Describer is what a principal may describe.
type Describer struct {
	Topic func(name string) bool
	Group func(id string) bool
}

// Window is a part of a list: Limit items from Offset on.
type Window struct {
	Offset int
	Limit  int
}

// DefaultSelection is every topic and group, internal topics included,
// the first DefaultListLimit of each.
func DefaultSelection() Selection {
	return Selection{Topics: Window{0, DefaultListLimit}, Groups: Window{0, DefaultListLimit}}
}

// ParamError is a parameter a request may not carry; the handler answers
// 400 with it.
type ParamError struct{ Name, Msg string }

func (e *ParamError) Error() string { return e.Name + ": " + e.Msg }

// ParseSelection reads GET /v1/console's parameters: q, internal
// (true or false), topics_limit, topics_offset, groups_limit,
// groups_offset. A bad one is a *ParamError naming it.
func ParseSelection(v url.Values) (Selection, error) {
	s := DefaultSelection()
	s.Query = v.Get("q")
	if len(s.Query) > MaxQueryBytes {
		return s, &ParamError{"q", fmt.Sprintf("%d bytes: at most %d", len(s.Query), MaxQueryBytes)}
	}
	switch in := v.Get("internal"); in {
	case "", "true":
	case "false":
		s.HideInternal = true
	default:
		return s, &ParamError{"internal", fmt.Sprintf("%q: want true or false", in)}
	}
	for _, p := range []struct {
		name        string
		to          *int
		least, most int
	}{
		{"topics_limit", &s.Topics.Limit, 1, MaxListLimit},
		{"topics_offset", &s.Topics.Offset, 0, -1},
		{"groups_limit", &s.Groups.Limit, 1, MaxListLimit},
		{"groups_offset", &s.Groups.Offset, 0, -1},
	} {
		text := v.Get(p.name)
		if text == "" {
			continue
		}
		n, err := strconv.Atoi(text)
		switch {
		case err != nil || n < p.least:
			return s, &ParamError{p.name, fmt.Sprintf("%q: want a whole number of at least %d", text, p.least)}
		case p.most > 0 && n > p.most:
			return s, &ParamError{p.name, fmt.Sprintf("%d: at most %d", n, p.most)}
		}
		*p.to = n
	}
	return s, nil
}

// Listing says which part of the cluster's topics and groups a View
// holds.
type Listing struct {
	Query    string `json:"q"`
	Internal bool   `json:"internal"` // internal topics are counted and listed
	Topics   Listed `json:"topics"`
	Groups   Listed `json:"groups"`
}

// Listed is one list's window: the items from Offset on, at most Limit
// of them, out of Matched that match the query.
type Listed struct {
	Offset  int `json:"offset"`
	Limit   int `json:"limit"`
	Matched int `json:"matched"`
}

// Select is v with only the topics and groups s asks for. v is not
// changed: the lists of the result are new.
func (v View) Select(s Selection) View {
	q := strings.ToLower(s.Query)
	out := v
	out.Listed = Listing{Query: s.Query, Internal: !s.HideInternal}
	topicOK, groupOK := func(string) bool { return true }, func(string) bool { return true }
	if d := s.MayDescribe; d != nil {
		topicOK, groupOK = d.Topic, d.Group
		out.Moves = []Move{}
		for _, m := range v.Moves {
			if topicOK(m.Topic) {
				out.Moves = append(out.Moves, m)
			}
		}
	}
	out.Topics, out.Listed.Topics = window(v.Topics, s.Topics, func(t Topic) bool {
		return (!s.HideInternal || !t.Internal) && nameMatches(t.Name, q) && topicOK(t.Name)
	})
	out.Groups, out.Listed.Groups = window(v.Groups, s.Groups, func(g Group) bool { return nameMatches(g.Name, q) && groupOK(g.Name) })
	return out
}

// nameMatches reports whether name contains lowerQuery, ignoring case.
func nameMatches(name, lowerQuery string) bool {
	return lowerQuery == "" || strings.Contains(strings.ToLower(name), lowerQuery)
}

// window is the items keep keeps, from w.Offset on and at most w.Limit of
// them, in a new slice (never nil), and how many were kept in all.
func window[T any](items []T, w Window, keep func(T) bool) ([]T, Listed) {
	out := []T{}
	matched := 0
	for _, it := range items {
		if !keep(it) {
			continue
		}
		if matched >= w.Offset && len(out) < w.Limit {
			out = append(out, it)
		}
		matched++
	}
	return out, Listed{Offset: w.Offset, Limit: w.Limit, Matched: matched}
}

// listedAll is a Listing of every topic and group, as Build makes them.
func listedAll(v *View) Listing {
	return Listing{Internal: true,
		Topics: Listed{Limit: len(v.Topics), Matched: len(v.Topics)},
		Groups: Listed{Limit: len(v.Groups), Matched: len(v.Groups)}}
}

// TopicDetail is d less the groups the describer may not describe; nil
// keeps d.
func (m *Describer) TopicDetail(d TopicDetail) TopicDetail {
	if m == nil {
		return d
	}
	d.Groups = slices.DeleteFunc(slices.Clone(d.Groups), func(g TopicGroup) bool { return !m.Group(g.Name) })
	return d
}

// GroupDetail is d less the lines of topics the describer may not
// describe.
func (m *Describer) GroupDetail(d GroupDetail) GroupDetail {
	if m == nil {
		return d
	}
	d.Group.Lag = slices.DeleteFunc(slices.Clone(d.Group.Lag), func(l GroupPartition) bool { return !m.Topic(l.Topic) })
	return d
}

// AgentDetail is d less the replicas of topics, and the groups, the
// describer may not describe. The agent's own counts stay: Kafka shows
// brokers to anyone.
func (m *Describer) AgentDetail(d AgentDetail) AgentDetail {
	if m == nil {
		return d
	}
	d.Replicas = slices.DeleteFunc(slices.Clone(d.Replicas), func(r AgentReplica) bool { return !m.Topic(r.Topic) })
	d.Coordinates = slices.DeleteFunc(slices.Clone(d.Coordinates), func(g string) bool { return !m.Group(g) })
	return d
}
