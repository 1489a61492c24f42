package httpapi

// The principal of an HTTP client certificate (auth.go): named as on an
// SSL Kafka listener (agent/kafka/tlsprincipal.go), and asked of the ACLs
// as a Kafka admin request on the cluster would be, or a Fetch of the
// topic for the message browser's records.

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

// allowed asks the ACLs whether principal, from r's host, may do need:
// on the CLUSTER, or READ the topic of a read of records.
func (p *httpPrincipals) allowed(r *http.Request, principal string, need httpNeed) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	switch need {
	case needRead:
		topic := r.URL.Query().Get("topic")
		if topic == "" {
			return true // nothing is read: the handler answers 400
		}
		return p.authorize(principal, host, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, topic)
	case needAlter:
		return p.authorize(principal, host, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	return p.authorize(principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}
