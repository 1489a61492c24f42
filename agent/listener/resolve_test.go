package listener

import (
	"strings"
	"testing"

	"github.com/strata-streaming/strata/agent/kafka"
)

func TestResolve(t *testing.T) {
	type want struct {
		name  string
		proto kafka.SecurityProtocol
		addr  string
		adv   string // host:port, empty for the bound port on localhost
	}
	tests := []struct {
		name                      string
		listeners, protos, adv    string
		kafkaAddr, advertisedAddr string
		certs                     bool // set --tls-cert-file and --tls-key-file
		noMechanisms              bool // empty --sasl-enabled-mechanisms
		want                      []want
		err                       string
	}{
		{name: "shorthand", kafkaAddr: ":9092", want: []want{{"PLAINTEXT", kafka.Plaintext, ":9092", ""}}},
		{name: "shorthand advertised", kafkaAddr: ":9092", advertisedAddr: "k.example:19092",
			want: []want{{"PLAINTEXT", kafka.Plaintext, ":9092", "k.example:19092"}}},
		{name: "kafka form, plaintext moved first", listeners: "SASL_PLAINTEXT://:9093,PLAINTEXT://127.0.0.1:9092",
			adv:  "SASL_PLAINTEXT://kafka.example:9093",
			want: []want{{"PLAINTEXT", kafka.Plaintext, "127.0.0.1:9092", ""}, {"SASL_PLAINTEXT", kafka.SASLPlaintext, ":9093", "kafka.example:9093"}}},
		{name: "protocol map", listeners: "internal://:9092,external://:9093", protos: "INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
			want: []want{{"INTERNAL", kafka.Plaintext, ":9092", ""}, {"EXTERNAL", kafka.SASLPlaintext, ":9093", ""}}},
		{name: "name without protocol", listeners: "PLAINTEXT://:9092,EXTERNAL://:9093", err: "EXTERNAL has no security protocol"},
		{name: "tls without a certificate", listeners: "PLAINTEXT://:9092,SSL://:9094", err: "protocol SSL needs --tls-cert-file and --tls-key-file"},
		{name: "sasl ssl without a certificate", listeners: "PLAINTEXT://:9092,SASL_SSL://:9094", err: "protocol SASL_SSL needs --tls-cert-file"},
		{name: "tls", listeners: "PLAINTEXT://:9092,SASL_SSL://:9094", certs: true,
			want: []want{{"PLAINTEXT", kafka.Plaintext, ":9092", ""}, {"SASL_SSL", kafka.SASLSSL, ":9094", ""}}},
		{name: "no plaintext", listeners: "SASL_PLAINTEXT://:9093", err: "or one PLAINTEXT listener"},
		{name: "twice", listeners: "PLAINTEXT://:9092,PLAINTEXT://:9093", err: "named twice"},
		{name: "bad form", listeners: "PLAINTEXT:9092", err: "want NAME://host:port"},
		{name: "bad address", listeners: "PLAINTEXT://9092", err: "address"},
		{name: "advertised unknown", listeners: "PLAINTEXT://:9092", adv: "SASL_PLAINTEXT://h:9093", err: "not in --listeners"},
		{name: "advertised without port", listeners: "PLAINTEXT://:9092", adv: "PLAINTEXT://h:0", err: "--advertised-listeners PLAINTEXT"},
		{name: "advertised alone", kafkaAddr: ":9092", adv: "PLAINTEXT://h:9092", err: "needs --listeners"},
		{name: "sasl without mechanisms", listeners: "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093", noMechanisms: true, err: "empty --sasl-enabled-mechanisms"},
		{name: "bad protocol", listeners: "PLAINTEXT://:9092", protos: "PLAINTEXT:TLS", err: "unknown security protocol"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.KafkaAddr, c.AdvertisedKafkaAddr = tc.kafkaAddr, tc.advertisedAddr
			c.Listeners, c.ListenerSecurityProtocolMap, c.AdvertisedListeners = tc.listeners, tc.protos, tc.adv
			mechanisms := []string{"PLAIN"}
			if tc.noMechanisms {
				mechanisms = nil
			}
			got, err := c.Resolve(tc.certs, mechanisms)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d listeners, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				adv := ""
				if g.Advertised != (HostPort{}) {
					adv = g.Advertised.String()
				}
				if g.Name != w.name || g.Protocol != w.proto || g.Addr != w.addr || adv != w.adv {
					t.Errorf("listener %d: %+v (advertised %q), want %+v", i, g, adv, w)
				}
			}
		})
	}
}
