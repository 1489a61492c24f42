package listener

import (
	"fmt"
	"net"
	"strings"

	"github.com/strata-streaming/strata/agent/kafka"
)

// defaultProtocolMap is Kafka's listener.security.protocol.map default:
// each protocol name maps to itself.
var defaultProtocolMap = map[string]kafka.SecurityProtocol{
	"PLAINTEXT": kafka.Plaintext, "SSL": kafka.SSL, "SASL_PLAINTEXT": kafka.SASLPlaintext, "SASL_SSL": kafka.SASLSSL,
}

// Resolve reads --listeners, --listener-security-protocol-map and
// --advertised-listeners, or the --kafka-addr shorthand; the first
// listener returned is the one replication uses. tlsEnabled says whether
// the agent has a certificate, saslMechanisms are
// --sasl-enabled-mechanisms: a TLS or SASL listener without them is
// refused, as no client could use it.
func (c Config) Resolve(tlsEnabled bool, saslMechanisms []string) ([]Spec, error) {
	if c.Listeners == "" {
		l := Spec{Listener: kafka.DefaultListener, Addr: c.KafkaAddr}
		if c.AdvertisedKafkaAddr != "" {
			hp, err := SplitAdvertised(c.AdvertisedKafkaAddr)
			if err != nil {
				return nil, fmt.Errorf("--advertised-kafka-addr %q: %v", c.AdvertisedKafkaAddr, err)
			}
			l.Advertised = hp
		}
		if c.AdvertisedListeners != "" {
			return nil, fmt.Errorf("--advertised-listeners needs --listeners")
		}
		return []Spec{l}, nil
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
	binds, err := parseList("--listeners", c.Listeners)
	if err != nil {
		return nil, err
	}
	var out []Spec
	for _, b := range binds {
		p, ok := protocols[b.name]
		if !ok {
			return nil, fmt.Errorf("--listeners: listener %s has no security protocol in --listener-security-protocol-map", b.name)
		}
		if p.TLS() && !tlsEnabled {
			return nil, fmt.Errorf("--listeners: listener %s: protocol %s needs --tls-cert-file and --tls-key-file", b.name, p)
		}
		if p.SASL() && len(saslMechanisms) == 0 {
			return nil, fmt.Errorf("--listeners: listener %s: protocol %s with an empty --sasl-enabled-mechanisms: no client could authenticate", b.name, p)
		}
		out = append(out, Spec{Listener: kafka.Listener{Name: b.name, Protocol: p}, Addr: b.addr})
	}
	if c.AdvertisedListeners != "" {
		adv, err := parseList("--advertised-listeners", c.AdvertisedListeners)
		if err != nil {
			return nil, err
		}
		for _, a := range adv {
			i := index(out, a.name)
			if i < 0 {
				return nil, fmt.Errorf("--advertised-listeners: %s is not in --listeners", a.name)
			}
			hp, err := SplitAdvertised(a.addr)
			if err != nil {
				return nil, fmt.Errorf("--advertised-listeners %s %q: %v", a.name, a.addr, err)
			}
			out[i].Advertised = hp
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

// parseList reads NAME://host:port,... with unique names.
func parseList(flag, s string) ([]namedAddr, error) {
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

func index(ls []Spec, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}
