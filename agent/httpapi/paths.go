package httpapi

// What each HTTP request needs of its credentials (auth.go): changes
// and profiles always need ALTER on the CLUSTER; a read needs DESCRIBE on
// the CLUSTER when --http-require-auth-for names its group, else nothing.
// The message browser's records are a group of their own: READ on the
// topic read, as a Kafka Fetch needs, when the group is restricted (named,
// or the agent has --authorizer acl); and a certificate principal needs
// READ even where it is not.

import (
	"fmt"
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
	// pathsPages are the other reads: the status page, the console's
	// pages and their JSON (the overview, charts, and the pages of one
	// topic, group or agent), GET /v1/tiering and GET /v1/drain.
	pathsPages pathGroup = "pages"
	// pathsRecords is the message browser's GET /v1/console/records: the
	// records of topics, not counters about them.
	pathsRecords pathGroup = "records"
)

var pathGroups = []pathGroup{pathsMetrics, pathsProbes, pathsPages, pathsRecords}

// recordsPath is pathsRecords' one path.
const recordsPath = "/v1/console/records"

// groupOf is the group of a read of path.
func groupOf(path string) pathGroup {
	switch path {
	case "/metrics":
		return pathsMetrics
	case "/healthz", "/readyz":
		return pathsProbes
	case recordsPath:
		return pathsRecords
	}
	return pathsPages
}

// httpNeed is what a request asks of its credentials.
type httpNeed int

const (
	needNothing  httpNeed = iota
	needDescribe          // DESCRIBE on the CLUSTER: a restricted read
	needAlter             // ALTER on the CLUSTER: a change or a profile
	needRead              // READ on the topic of ?topic=: records
)

func (n httpNeed) operation() string {
	switch n {
	case needAlter:
		return "ALTER"
	case needRead:
		return "READ"
	}
	return "DESCRIBE"
}

// resource is what r's need is asked about, as a message names it.
func (n httpNeed) resource(r *http.Request) string {
	if n == needRead {
		return fmt.Sprintf("the TOPIC %q", r.URL.Query().Get("topic"))
	}
	return "the CLUSTER"
}

// grant is the command that would allow principal what r needs.
func (n httpNeed) grant(r *http.Request, principal string) string {
	if n == needRead {
		return fmt.Sprintf("strata acl create --allow-principal %s --operation read --topic %s", principal, r.URL.Query().Get("topic"))
	}
	return fmt.Sprintf("strata acl create --allow-principal %s --operation %s --cluster", principal, strings.ToLower(n.operation()))
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
	group := groupOf(r.URL.Path)
	switch {
	case group == pathsRecords && restricted[group]:
		return needRead
	case restricted[group]:
		return needDescribe
	}
	return needNothing
}

// isChange reports whether r may change state: any method but GET and
// HEAD.
func isChange(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}
