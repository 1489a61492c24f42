// Package listener is an agent's Kafka listeners in Kafka's form
// (docs/security.md): which to bind, with which security protocol, and
// the addresses clients are told; how the listeners travel in gossip; and
// the client side of the inter-agent listener, with which followers dial
// their leaders (interagent.go).
//
//	--listeners PLAINTEXT://:9092,SASL_PLAINTEXT://:9093
//	--listener-security-protocol-map INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT
//	--advertised-listeners PLAINTEXT://10.0.0.1:9092,SASL_PLAINTEXT://kafka.example.com:9093
//
// Without --listeners the agent has one PLAINTEXT listener on --kafka-addr,
// advertised as --advertised-kafka-addr: the embedded default, unchanged.
// With it, --kafka-addr and --advertised-kafka-addr are not used. The first
// PLAINTEXT listener carries replication between agents (a follower
// fetches from its leader's registered Kafka address without SASL), so one
// is required, unless --inter-agent-listener (Kafka's
// inter.broker.listener.name) names another: followers then dial their
// leaders with its TLS (trusting --tls-client-ca-file, presenting the
// agent's own certificate) and SASL (--inter-agent-sasl-*). SSL and
// SASL_SSL listeners serve TLS with --tls-cert-file and --tls-key-file
// (internal/tlsconfig), asking client certificates as --tls-client-auth
// says.
//
// The package reads flags and binds sockets; serving them is the wire
// server's (agent/kafka).
package listener

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// Config is the listener flags, part of the agent's Config.
type Config struct {
	// KafkaAddr (--kafka-addr) is where the Kafka listener binds.
	KafkaAddr string
	// AdvertisedKafkaAddr (--advertised-kafka-addr) is the host:port clients
	// are told to connect to; empty means localhost with the bound port.
	AdvertisedKafkaAddr string
	// Listeners (--listeners) are Kafka listeners in Kafka's form,
	// NAME://host:port,...; empty: one PLAINTEXT listener on KafkaAddr.
	Listeners string
	// ListenerSecurityProtocolMap (--listener-security-protocol-map) maps
	// listener names to protocols, NAME:PROTOCOL,...; empty: each
	// protocol's name maps to itself.
	ListenerSecurityProtocolMap string
	// AdvertisedListeners (--advertised-listeners) are the addresses
	// clients are told, per listener, NAME://host:port,...
	AdvertisedListeners string
	// InterAgentListener (--inter-agent-listener) names the listener
	// replication uses; InterAgentSASL* are the credentials followers
	// present on it when it is a SASL one.
	InterAgentListener         string
	InterAgentSASLMechanism    string
	InterAgentSASLUser         string
	InterAgentSASLPasswordFile string
}

// DefaultConfig is the embedded default: PLAINTEXT on :9092.
func DefaultConfig() Config {
	return Config{KafkaAddr: ":9092", InterAgentSASLMechanism: "SCRAM-SHA-512"}
}

// HostPort is an advertised address split for Metadata.
type HostPort struct {
	Host string
	Port int32
}

// String is host:port.
func (h HostPort) String() string { return net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) }

// SplitAdvertised checks an address clients are told: a host and a port
// in [1, 65535].
func SplitAdvertised(addr string) (HostPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return HostPort{}, err
	}
	if host == "" {
		return HostPort{}, errors.New("the host is empty")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return HostPort{}, fmt.Errorf("port %q is not in [1, 65535]", port)
	}
	return HostPort{Host: host, Port: int32(n)}, nil
}

// Spec is one listener to bind.
type Spec struct {
	kafka.Listener
	Addr       string   // host:port to bind
	Advertised HostPort // zero: localhost with the bound port
}

// Bound is a listener with its socket and advertised address.
type Bound struct {
	kafka.Listener
	Ln         net.Listener
	Advertised HostPort
}

// Bind opens specs' sockets, in TLS with tlsFiles where the protocol says
// so; on an error it closes what it opened.
func (c Config) Bind(specs []Spec, tlsFiles tlsconfig.Files, logger *slog.Logger) (_ []Bound, err error) {
	var kafkaTLS *tlsconfig.Server
	for _, s := range specs {
		if s.Protocol.TLS() && kafkaTLS == nil {
			if kafkaTLS, err = tlsconfig.NewServer(tlsFiles, logger.With("listener", "kafka")); err != nil {
				return nil, err
			}
		}
	}
	var out []Bound
	defer func() {
		if err != nil {
			for _, b := range out {
				b.Ln.Close()
			}
		}
	}()
	for _, s := range specs {
		ln, err := net.Listen("tcp", s.Addr)
		if err != nil {
			if c.Listeners == "" {
				return nil, fmt.Errorf("--kafka-addr %s: %w", s.Addr, err)
			}
			return nil, fmt.Errorf("--listeners %s://%s: %w", s.Name, s.Addr, err)
		}
		if s.Protocol.TLS() {
			ln = tls.NewListener(ln, kafkaTLS.Config())
		}
		adv := s.Advertised
		if adv == (HostPort{}) {
			adv = HostPort{Host: "localhost", Port: int32(ln.Addr().(*net.TCPAddr).Port)}
		}
		out = append(out, Bound{Listener: s.Listener, Ln: ln, Advertised: adv})
	}
	return out, nil
}

// MemberListeners is the Listeners field of the agent's membership: NAME=host:port
// for every listener, "" for the --kafka-addr shorthand.
func (c Config) MemberListeners(bound []Bound) string {
	if c.Listeners == "" {
		return ""
	}
	parts := make([]string, 0, len(bound))
	for _, l := range bound {
		parts = append(parts, l.Name+"="+l.Advertised.String())
	}
	return strings.Join(parts, ",")
}

// ParseEndpoints reads what MemberListeners writes; bad entries are skipped (they
// came from another agent, and its default address remains).
func ParseEndpoints(s string) []kafka.Endpoint {
	if s == "" {
		return nil
	}
	var out []kafka.Endpoint
	for _, entry := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		hp, err := SplitAdvertised(addr)
		if err != nil {
			continue
		}
		out = append(out, kafka.Endpoint{Listener: name, Host: hp.Host, Port: hp.Port})
	}
	return out
}

// Advertised is Kafka's advertised.listeners of bound,
// NAME://host:port,...
func Advertised(bound []Bound) string {
	parts := make([]string, 0, len(bound))
	for _, l := range bound {
		parts = append(parts, l.Name+"://"+l.Advertised.String())
	}
	return strings.Join(parts, ",")
}
