package httpapi

// The console's pages of one topic, group or agent (issue 32), which can
// be linked to and shared:
//
//	GET /console/topics/{name}      the page (agent/console/assets/detail.html)
//	GET /console/groups/{id}        the same page, which reads what to show
//	GET /console/agents/{id}        from its own path
//	GET /v1/console/topics/{name}   that topic, its partitions and the groups reading it, as JSON
//	GET /v1/console/groups/{id}     that group's members and lag
//	GET /v1/console/agents/{id}     that agent, its load and the replicas it holds
//
// Each reads the gathering /v1/console made (consoleGate), so a page of
// its own costs no more than the overview. Names arrive path-escaped
// (the page writes them with encodeURIComponent); ServeMux matches the
// escaped path, so a group id holding "/" is one segment, and PathValue
// unescapes it. They are reads of the "pages" group (paths.go), as
// /v1/console is.

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/strata-streaming/strata/agent/console"
)

func (s *Server) registerConsolePages(mux *http.ServeMux) {
	page := console.DetailPage()
	mux.Handle("GET /console/topics/{name}", page)
	mux.Handle("GET /console/groups/{id}", page)
	mux.Handle("GET /console/agents/{id}", page)
	mux.HandleFunc("GET /v1/console/topics/{name}", s.consoleTopic)
	mux.HandleFunc("GET /v1/console/groups/{id}", s.consoleGroup)
	mux.HandleFunc("GET /v1/console/agents/{id}", s.consoleAgent)
}

func (s *Server) consoleTopic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	g, ok := s.gathered(w, r)
	if !ok {
		return
	}
	d, found := g.view.TopicDetail(name)
	m := s.describer(r)
	if found && m != nil && !m.Topic(name) {
		// As Kafka answers a topic the caller may not describe.
		writeJSONError(w, http.StatusForbidden, fmt.Sprintf("topic %q: not authorized to describe it (TOPIC_AUTHORIZATION_FAILED)", name))
		return
	}
	if !found {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("topic %q not found", name))
		return
	}
	writeConsoleJSON(w, m.TopicDetail(d))
}

func (s *Server) consoleGroup(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	g, ok := s.gathered(w, r)
	if !ok {
		return
	}
	d, found := g.view.GroupDetail(id)
	m := s.describer(r)
	if m != nil && !m.Group(id) {
		writeJSONError(w, http.StatusForbidden, fmt.Sprintf("group %q: not authorized to describe it (GROUP_AUTHORIZATION_FAILED)", id))
		return
	}
	switch {
	case !found && g.groupsErr != nil:
		// Not known to be missing: the groups could not be listed.
		writeJSONError(w, http.StatusBadGateway, fmt.Sprintf("group %q: the consumer groups could not be listed: %v", id, g.groupsErr))
	case !found:
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("group %q not found: the cluster lists no consumer group of that id", id))
	default:
		writeConsoleJSON(w, m.GroupDetail(d))
	}
}

func (s *Server) consoleAgent(w http.ResponseWriter, r *http.Request) {
	text := r.PathValue("id")
	id, err := strconv.ParseInt(text, 10, 32)
	if err != nil || id < 0 {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("agent id %q: want an agent id, a number of at least 0", text))
		return
	}
	g, ok := s.gathered(w, r)
	if !ok {
		return
	}
	d, found := g.view.AgentDetail(int32(id))
	if !found {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("agent %d not found: it is not live, and no partition names it a replica", id))
		return
	}
	writeConsoleJSON(w, s.describer(r).AgentDetail(d))
}
