package loadgen

import (
	"context"
	"testing"
	"time"
)

// TestSecuritySmoke runs a second of paced end-to-end load over each
// listener of a StrataSecurity agent, plaintext first, as strata-bench's
// security scenarios alternate them. The SASL_SSL run must get every
// record through, and the agent must have counted its clients' SCRAM
// logins: the admin client, the producer and the consumer each log in on
// every connection, so at least three, and none during the plaintext run.
// Without TLS or SASL in the clients' options the agent closes their
// connections and the run fails; pointed at the plaintext port, the
// agent counts no login.
func TestSecuritySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := StartStrataSecurity(ctx, StrataOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	logins := func() float64 {
		t.Helper()
		m, err := scrape(ctx, s.agent.metricsAddrs())
		if err != nil {
			t.Fatal(err)
		}
		return m.sum("strata_kafka_sasl_authentications_total", "mechanism", benchSASLMechanism, "outcome", "ok")
	}
	cfg := DefaultConfig()
	cfg.Mode, cfg.Rate, cfg.Duration, cfg.DrainTimeout = ModeEndToEnd, 200, time.Second, 30*time.Second
	for _, target := range []Target{s.Plaintext(), s.SASLSSL()} {
		cfg.Scenario = "security-smoke"
		before := logins()
		res, err := Run(ctx, target, cfg)
		if err != nil {
			t.Fatalf("%s: %v", target.System(), err)
		}
		t.Log(res.Summary())
		if res.System != target.System() {
			t.Errorf("result of system %q, want %q", res.System, target.System())
		}
		checkResult(t, cfg, res)
		n := logins() - before
		switch target.System() {
		case SystemStrataPlaintext:
			if n != 0 {
				t.Errorf("the plaintext run logged in %v times over SASL", n)
			}
		case SystemStrataSASLSSL:
			if n < 3 {
				t.Errorf("the SASL_SSL run logged in %v times with %s, want at least 3 (admin, producer, consumer)", n, benchSASLMechanism)
			}
		}
	}
}

// TestSecurityValidate: the client settings name what is wrong.
func TestSecurityValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Security
		ok   bool
	}{
		{"plaintext", Security{}, true},
		{"scram", Security{SASLMechanism: "scram-sha-512", SASLUser: "u", SASLPassword: "p"}, true},
		{"plain over tls", Security{TLS: true, SASLMechanism: "PLAIN", SASLUser: "u", SASLPassword: "p"}, true},
		{"unknown mechanism", Security{SASLMechanism: "GSSAPI", SASLUser: "u", SASLPassword: "p"}, false},
		{"no password", Security{SASLMechanism: "PLAIN", SASLUser: "u"}, false},
		{"user without mechanism", Security{SASLUser: "u"}, false},
		{"ca and skip-verify", Security{CAFile: "ca.pem", InsecureSkipVerify: true}, false},
	} {
		if err := tc.s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
