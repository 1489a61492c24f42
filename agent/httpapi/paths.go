package httpapi

// What each HTTP request needs of its credentials (auth.go): changes
// and profiles always need ALTER on the CLUSTER; a read needs DESCRIBE on
// the CLUSTER when --http-require-auth-for names its group, else nothing.

import (
	"net/http"
	"strings"
)

// pathGroup is a value of --http-require-auth-for.
type pathGroup string

const (
	// pathsMetrics is /metrics, which Prometheus scrapes.
	pathsMetrics pathGroup = "metrics"
	// pathsProbes are /healthz and /readyz, which the kubelet probes.
	pathsProbes pathGroup = "probes"
	// pathsPages are the other reads: the status page, the console and
	// its JSON, GET /v1/tiering and GET /v1/drain.
	pathsPages pathGroup = "pages"
)

var pathGroups = []pathGroup{pathsMetrics, pathsProbes, pathsPages}

// groupOf is the group of a read of path.
func groupOf(path string) pathGroup {
	switch path {
	case "/metrics":
		return pathsMetrics
	case "/healthz", "/readyz":
		return pathsProbes
	}
	return pathsPages
}

// httpNeed is what a request asks of its credentials.
type httpNeed int

const (
	needNothing  httpNeed = iota
	needDescribe          // DESCRIBE on the CLUSTER: a restricted read
	needAlter             // ALTER on the CLUSTER: a change or a profile
)

func (n httpNeed) operation() string {
	if n == needAlter {
		return "ALTER"
	}
	return "DESCRIBE"
}

// needOf is what r needs, with the read-only groups in restricted.
func needOf(r *http.Request, restricted map[pathGroup]bool) httpNeed {
	// Profiles show the process's memory and stacks: as guarded as a
	// change, whatever the method.
	if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
		return needAlter
	}
	if isChange(r) {
		return needAlter
	}
	if restricted[groupOf(r.URL.Path)] {
		return needDescribe
	}
	return needNothing
}

// isChange reports whether r may change state: any method but GET and
// HEAD.
func isChange(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}
