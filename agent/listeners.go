package agent

// Kafka listeners in Kafka's form (docs/security.md):
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
// agent's own certificate) and SASL (--inter-agent-sasl-*; interagent.go). SSL and SASL_SSL listeners
// serve TLS with --tls-cert-file and --tls-key-file (internal/tlsconfig),
// asking client certificates as --tls-client-auth says.

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/agent/kafka"
)

// defaultProtocolMap is Kafka's listener.security.protocol.map default:
// each protocol name maps to itself.
var defaultProtocolMap = map[string]kafka.SecurityProtocol{
	"PLAINTEXT": kafka.Plaintext, "SSL": kafka.SSL, "SASL_PLAINTEXT": kafka.SASLPlaintext, "SASL_SSL": kafka.SASLSSL,
}

// listenerConfig is one listener to bind.
type listenerConfig struct {
	kafka.Listener
	addr       string   // host:port to bind
	advertised hostPort // zero: localhost with the bound port
}

// listenerConfigs resolves --listeners, --listener-security-protocol-map
// and --advertised-listeners, or the --kafka-addr shorthand; the first
// entry returned is the one replication uses.
func (c Config) listenerConfigs() ([]listenerConfig, error) {
	if c.Listeners == "" {
		l := listenerConfig{Listener: kafka.DefaultListener, addr: c.KafkaAddr}
		if c.AdvertisedKafkaAddr != "" {
			hp, err := splitAdvertised(c.AdvertisedKafkaAddr)
			if err != nil {
				return nil, fmt.Errorf("--advertised-kafka-addr %q: %v", c.AdvertisedKafkaAddr, err)
			}
			l.advertised = hp
		}
		if c.AdvertisedListeners != "" {
			return nil, fmt.Errorf("--advertised-listeners needs --listeners")
		}
		return []listenerConfig{l}, nil
	}
	protocols := defaultProtocolMap
	if c.ListenerSecurityProtocolMap != "" {
		protocols = map[string]kafka.SecurityProtocol{}
		for _, entry := range strings.Split(c.ListenerSecurityProtocolMap, ",") {
			name, proto, ok := strings.Cut(strings.TrimSpace(entry), ":")
			if !ok || name == "" {
				return nil, fmt.Errorf("--listener-security-protocol-map %q: want NAME:PROTOCOL,...", c.ListenerSecurityProtocolMap)
			}
			p, err := kafka.ParseSecurityProtocol(strings.ToUpper(proto))
			if err != nil {
				return nil, fmt.Errorf("--listener-security-protocol-map: listener %s: %v", name, err)
			}
			protocols[strings.ToUpper(name)] = p
		}
	}
	binds, err := parseListenerList("--listeners", c.Listeners)
	if err != nil {
		return nil, err
	}
	var out []listenerConfig
	for _, b := range binds {
		p, ok := protocols[b.name]
		if !ok {
			return nil, fmt.Errorf("--listeners: listener %s has no security protocol in --listener-security-protocol-map", b.name)
		}
		if p.TLS() && !c.TLS.Enabled() {
			return nil, fmt.Errorf("--listeners: listener %s: protocol %s needs --tls-cert-file and --tls-key-file", b.name, p)
		}
		if p.SASL() && len(c.Kafka.SASLEnabledMechanisms) == 0 {
			return nil, fmt.Errorf("--listeners: listener %s: protocol %s with an empty --sasl-enabled-mechanisms: no client could authenticate", b.name, p)
		}
		out = append(out, listenerConfig{Listener: kafka.Listener{Name: b.name, Protocol: p}, addr: b.addr})
	}
	if c.AdvertisedListeners != "" {
		adv, err := parseListenerList("--advertised-listeners", c.AdvertisedListeners)
		if err != nil {
			return nil, err
		}
		for _, a := range adv {
			i := indexListener(out, a.name)
			if i < 0 {
				return nil, fmt.Errorf("--advertised-listeners: %s is not in --listeners", a.name)
			}
			hp, err := splitAdvertised(a.addr)
			if err != nil {
				return nil, fmt.Errorf("--advertised-listeners %s %q: %v", a.name, a.addr, err)
			}
			out[i].advertised = hp
		}
	}
	// Replication's listener goes first: --inter-agent-listener, else the
	// first PLAINTEXT one.
	i := -1
	for j, l := range out {
		if c.InterAgentListener != "" && l.Name == strings.ToUpper(c.InterAgentListener) ||
			c.InterAgentListener == "" && l.Protocol == kafka.Plaintext {
			i = j
			break
		}
	}
	switch {
	case i < 0 && c.InterAgentListener != "":
		return nil, fmt.Errorf("--inter-agent-listener %s is not in --listeners %q", c.InterAgentListener, c.Listeners)
	case i < 0:
		return nil, fmt.Errorf("--listeners %q: replication between agents needs --inter-agent-listener, or one PLAINTEXT listener (bind it to a private address)", c.Listeners)
	}
	if p := out[i].Protocol; p.SASL() && (c.InterAgentSASLUser == "" || c.InterAgentSASLPasswordFile == "") {
		return nil, fmt.Errorf("--inter-agent-listener %s is %s: set --inter-agent-sasl-user and --inter-agent-sasl-password-file (a user --add-scram can create)", out[i].Name, p)
	}
	out[0], out[i] = out[i], out[0]
	return out, nil
}

type namedAddr struct{ name, addr string }

// parseListenerList reads NAME://host:port,... with unique names.
func parseListenerList(flag, s string) ([]namedAddr, error) {
	var out []namedAddr
	for _, entry := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(entry), "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s %q: want NAME://host:port,...", flag, s)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%s: listener %s address %q: %v", flag, name, addr, err)
		}
		name = strings.ToUpper(name)
		for _, o := range out {
			if o.name == name {
				return nil, fmt.Errorf("%s: listener %s named twice", flag, name)
			}
		}
		out = append(out, namedAddr{name: name, addr: addr})
	}
	return out, nil
}

func indexListener(ls []listenerConfig, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// boundListener is a listener with its socket and advertised address.
type boundListener struct {
	kafka.Listener
	ln         net.Listener
	advertised hostPort
}

// listenersGossip is the Listeners field of this agent's membership:
// NAME=host:port for every listener, "" for the --kafka-addr shorthand.
func (a *Agent) listenersGossip() string {
	if a.cfg.Listeners == "" {
		return ""
	}
	parts := make([]string, 0, len(a.listeners))
	for _, l := range a.listeners {
		parts = append(parts, l.Name+"="+net.JoinHostPort(l.advertised.host, strconv.Itoa(int(l.advertised.port))))
	}
	return strings.Join(parts, ",")
}

// parseEndpoints reads what listenersGossip writes; bad entries are
// skipped (they came from another agent, and the default address remains).
func parseEndpoints(s string) []kafka.Endpoint {
	if s == "" {
		return nil
	}
	var out []kafka.Endpoint
	for _, entry := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		hp, err := splitAdvertised(addr)
		if err != nil {
			continue
		}
		out = append(out, kafka.Endpoint{Listener: name, Host: hp.host, Port: hp.port})
	}
	return out
}

// advertisedListeners is Kafka's advertised.listeners of this agent,
// NAME://host:port,...
func (a *Agent) advertisedListeners() string {
	parts := make([]string, 0, len(a.listeners))
	for _, l := range a.listeners {
		parts = append(parts, l.Name+"://"+net.JoinHostPort(l.advertised.host, strconv.Itoa(int(l.advertised.port))))
	}
	return strings.Join(parts, ",")
}
