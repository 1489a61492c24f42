package httpapi

// The principal of an HTTP client certificate (auth.go): named as on an
// SSL Kafka listener (agent/kafka/tlsprincipal.go), and asked of the ACLs
// as a Kafka admin request on the cluster would be.

import (
	"net"
	"net/http"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// httpPrincipals names and authorizes certificate principals.
type httpPrincipals struct {
	mapper *tlsconfig.PrincipalMapper
	// authorize is the agent's ACL decision (Host.Authorize).
	authorize func(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
}

// of returns "User:<name>" for r's verified client certificate: "" and
// nil without one, "" and the mapper's error when no rule maps its
// subject (Kafka closes such a connection; here the request is refused).
func (p *httpPrincipals) of(r *http.Request) (string, error) {
	if r.TLS == nil {
		return "", nil
	}
	subject := tlsconfig.Subject(*r.TLS)
	if subject == "" {
		return "", nil
	}
	name, err := p.mapper.Name(subject)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// allowed asks the ACLs whether principal, from r's host, may do need on
// the CLUSTER.
func (p *httpPrincipals) allowed(r *http.Request, principal string, need httpNeed) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	op := kmsg.ACLOperationDescribe
	if need == needAlter {
		op = kmsg.ACLOperationAlter
	}
	return p.authorize(principal, host, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}
