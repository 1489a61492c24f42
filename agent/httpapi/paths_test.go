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
	} {
		if got := needOf(httptest.NewRequest(c.method, c.path, nil), restricted); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
	if got := needOf(httptest.NewRequest("GET", "/v1/console/records?topic=t", nil), nil); got != needNothing {
		t.Errorf("records, not restricted: %v, want nothing", got)
	}
}
