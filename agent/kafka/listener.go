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

// Endpoint is one agent's advertised address for one listener.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// address is where a client connected on listener should reach b: the
// endpoint of that name, or b's default address when b publishes none of
// that name (an agent started with only --kafka-addr, or a listener set
// that differs between agents, which docs/security.md warns against).
func (b Broker) address(listener string) (string, int32) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port
		}
	}
	return b.Host, b.Port
}

// listenerName is the name of the listener r arrived on.
func (r *request) listenerName() string {
	if r.conn == nil {
		return DefaultListener.Name
	}
	return r.conn.listener.Name
}
