package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestHTTPNeedOf(t *testing.T) {
	restricted := map[pathGroup]bool{pathsMetrics: true, pathsRecords: true}
	for _, c := range []struct {
		method, path string
		want         httpNeed
	}{
		{"POST", "/v1/drain", needAlter},
		{"PUT", "/metrics", needAlter},
		{"GET", "/debug/pprof/heap", needAlter},
		{"GET", "/metrics", needDescribe},
		{"HEAD", "/metrics", needDescribe},
		{"GET", "/healthz", needNothing},
		{"GET", "/readyz", needNothing},
		{"GET", "/console/", needNothing},
		{"GET", "/v1/drain", needNothing},
		{"GET", "/v1/console", needNothing},
		{"GET", "/v1/console/records?topic=t", needRead},
		{"GET", "/console/browse.html", needNothing},
		// The pages of one item and their JSON are pages, not records,
		// whatever their escaped names hold.
		{"GET", "/console/topics/orders.v1", needNothing},
		{"GET", "/v1/console/topics/orders.v1", needNothing},
		{"GET", "/v1/console/groups/x%2F..%2Frecords", needNothing},
		{"GET", "/v1/console/agents/2", needNothing},
		{"GET", "/v1/console?q=ord&topics_limit=10", needNothing},
	} {
		if got := needOf(httptest.NewRequest(c.method, c.path, nil), restricted); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
	if got := needOf(httptest.NewRequest("GET", "/v1/console/records?topic=t", nil), nil); got != needNothing {
		t.Errorf("records, not restricted: %v, want nothing", got)
	}
	// --http-require-auth-for pages restricts the console's every page
	// and its JSON, those of one topic, group or agent too.
	pages := map[pathGroup]bool{pathsPages: true}
	for _, path := range []string{"/console/", "/console/topics/orders.v1", "/console/groups/a%2Fb", "/console/agents/1",
		"/v1/console", "/v1/console?q=x&groups_offset=100", "/v1/console/topics/orders.v1", "/v1/console/groups/a%2Fb", "/v1/console/agents/1"} {
		if got := needOf(httptest.NewRequest("GET", path, nil), pages); got != needDescribe {
			t.Errorf("GET %s, pages restricted: %v, want DESCRIBE", path, got)
		}
	}
}
