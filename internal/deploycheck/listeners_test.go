package deploycheck

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// kafkaListener is one Kafka listener of the manifests' agent settings.
type kafkaListener struct {
	name, protocol string
	host           string // bound
	port           int
	// portName is the container port that must carry it: the listener's
	// name in lower case, or "kafka" for --kafka-addr's.
	portName   string
	interAgent bool // replication uses it (--inter-agent-listener)
}

// defaultProtocols is Kafka's listener.security.protocol.map default.
var defaultProtocols = map[string]string{"PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL"}

// manifestListeners reads the Kafka listeners from the parsed flags, as
// agent.Config resolves them: --listeners with its protocol map, or the
// one PLAINTEXT listener of --kafka-addr. Validate has already accepted
// them, so only the shape the tests need is read here.
func manifestListeners(t *testing.T, flags *pflag.FlagSet) []kafkaListener {
	t.Helper()
	value := func(name string) string { return flags.Lookup(name).Value.String() }
	hostPort := func(what, addr string) (string, int) {
		host, p, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			t.Fatalf("%s %q: want host:port", what, addr)
		}
		return host, n
	}
	if value("listeners") == "" {
		host, port := hostPort("--kafka-addr", value("kafka-addr"))
		return []kafkaListener{{name: "PLAINTEXT", protocol: "PLAINTEXT", host: host, port: port, portName: "kafka", interAgent: true}}
	}
	protocols := defaultProtocols
	if m := value("listener-security-protocol-map"); m != "" {
		protocols = map[string]string{}
		for _, e := range strings.Split(m, ",") {
			name, proto, _ := strings.Cut(strings.TrimSpace(e), ":")
			protocols[strings.ToUpper(name)] = strings.ToUpper(proto)
		}
	}
	interAgent := strings.ToUpper(value("inter-agent-listener"))
	var out []kafkaListener
	for _, e := range strings.Split(value("listeners"), ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(e), "://")
		if !ok {
			t.Fatalf("--listeners entry %q: want NAME://host:port", e)
		}
		name = strings.ToUpper(name)
		host, port := hostPort("--listeners "+name, addr)
		l := kafkaListener{name: name, protocol: protocols[name], host: host, port: port, portName: strings.ToLower(name)}
		l.interAgent = name == interAgent
		out = append(out, l)
	}
	if interAgent == "" {
		for i := range out {
			if out[i].protocol == "PLAINTEXT" {
				out[i].interAgent = true
				break
			}
		}
	}
	return out
}

// advertisedListeners reads the raw --advertised-listeners (with $(VAR)
// references unexpanded) as name → host:port; for --kafka-addr's listener,
// --advertised-kafka-addr.
func advertisedListeners(raw map[string]string) map[string]string {
	out := map[string]string{}
	if raw["listeners"] == "" {
		out["PLAINTEXT"] = raw["advertised-kafka-addr"]
		return out
	}
	for _, e := range strings.Split(raw["advertised-listeners"], ",") {
		if name, addr, ok := strings.Cut(strings.TrimSpace(e), "://"); ok {
			out[strings.ToUpper(name)] = addr
		}
	}
	return out
}
