package kafka

import "fmt"

// SecurityProtocol is Kafka's security.protocol of a listener.
type SecurityProtocol string

// Kafka's four security protocols. The Server sees TLS connections already
// unwrapped (the agent wraps the listener), so for it SSL is PLAINTEXT and
// SASL_SSL is SASL_PLAINTEXT.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// ParseSecurityProtocol reads a protocol name (upper case, as Kafka's
// listener.security.protocol.map spells it).
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	switch p := SecurityProtocol(s); p {
	case Plaintext, SASLPlaintext, SSL, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("unknown security protocol %q (want PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL)", s)
}

// TLS reports whether the listener's connections are TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether a connection must authenticate with SASL first.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener names a listening socket as Kafka does: Metadata and
// DescribeCluster answer a connection with the endpoints of the listener
// of the same name on every agent, and the protocol decides whether the
// connection authenticates first.
type Listener struct {
	Name     string
	Protocol SecurityProtocol
}

// DefaultListener is the single plaintext listener of --kafka-addr.
var DefaultListener = Listener{Name: "PLAINTEXT", Protocol: Plaintext}

// listenerName is the name of the listener r arrived on.
func (r *request) listenerName() string {
	if r.conn == nil {
		return DefaultListener.Name
	}
	return r.conn.listener.Name
}
