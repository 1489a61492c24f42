package kafka

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-streaming/strata/internal/kafkawire"
	iscram "github.com/strata-streaming/strata/internal/scram"
)

// fakeUsers holds credentials in memory (kafka.Users).
type fakeUsers struct {
	unset
	creds map[string][]iscram.Credential
}

func (f fakeUsers) ScramCredential(user string, m *iscram.Mechanism) (iscram.Credential, bool) {
	for _, c := range f.creds[user] {
		if c.Mechanism == m {
			return c, true
		}
	}
	return iscram.Credential{}, false
}

// saslServer serves one plaintext and one SASL_PLAINTEXT listener with the
// user alice (password "alice-secret") in both SCRAM mechanisms.
func saslServer(t *testing.T) (plainAddr, saslAddr string, m *Metrics) {
	t.Helper()
	users := fakeUsers{creds: map[string][]iscram.Credential{"alice": {
		iscram.SHA256.NewCredential("alice-secret", []byte("salt-256"), 4096),
		iscram.SHA512.NewCredential("alice-secret", []byte("salt-512"), 4096),
	}}}
	b := newAdminBackend()
	m = NewMetrics(prometheus.NewRegistry())
	srv := New(DefaultConfig(), Backends{Cluster: b, Topics: b, TopicAdmin: b, Users: users}, nil, m)
	pln, sln := listen(t), listen(t)
	served := make(chan error, 2)
	go func() { served <- srv.ServeListener(pln, DefaultListener) }()
	go func() { served <- srv.ServeListener(sln, Listener{Name: "SASL_PLAINTEXT", Protocol: SASLPlaintext}) }()
	t.Cleanup(func() {
		srv.Close()
		for range 2 {
			if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	})
	return pln.Addr().String(), sln.Addr().String(), m
}

func dialWire(t *testing.T, addr string) *kafkawire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := kafkawire.Dial(ctx, addr, kafkawire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func doWire(t *testing.T, c *kafkawire.Conn, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, req)
}

// TestSASLStates walks the state machine on the wire: what each phase
// accepts, answers and closes on.
func TestSASLStates(t *testing.T) {
	plainAddr, saslAddr, m := saslServer(t)
	handshake := func(version int16, mech string) *kmsg.SASLHandshakeRequest {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = version, mech
		return r
	}
	authenticate := func(token string) *kmsg.SASLAuthenticateRequest {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = 2, []byte(token)
		return r
	}
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version = 3

	t.Run("plaintext listener refuses SASL", func(t *testing.T) {
		c := dialWire(t, plainAddr)
		resp, err := doWire(t, c, handshake(1, "PLAIN"))
		if err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on plaintext: %+v, %v", resp, err)
		}
		resp, err = doWire(t, c, authenticate("\x00alice\x00alice-secret"))
		if err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("authenticate on plaintext: %+v, %v", resp, err)
		}
		if _, err := doWire(t, c, metadata); err != nil {
			t.Fatalf("metadata on plaintext: %v", err)
		}
	})
	t.Run("PLAIN, then no second handshake", func(t *testing.T) {
		c := dialWire(t, saslAddr)
		if _, err := doWire(t, c, apiVersions); err != nil {
			t.Fatalf("ApiVersions before the handshake: %v", err)
		}
		if resp, err := doWire(t, c, handshake(1, "PLAIN")); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("handshake: %+v, %v", resp, err)
		}
		resp, err := doWire(t, c, authenticate("\x00alice\x00alice-secret"))
		if err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 {
			t.Fatalf("authenticate: %+v, %v", resp, err)
		}
		if _, err := doWire(t, c, metadata); err != nil {
			t.Fatalf("metadata after authentication: %v", err)
		}
		resp, err = doWire(t, c, handshake(1, "PLAIN"))
		if err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second handshake: %+v, %v", resp, err)
		}
	})
	t.Run("ApiVersions after the handshake closes", func(t *testing.T) {
		c := dialWire(t, saslAddr)
		if _, err := doWire(t, c, handshake(1, "SCRAM-SHA-512")); err != nil {
			t.Fatal(err)
		}
		if _, err := doWire(t, c, apiVersions); err == nil {
			t.Fatal("ApiVersions between handshake and authenticate was answered")
		}
	})
	t.Run("SaslAuthenticate before the handshake closes", func(t *testing.T) {
		c := dialWire(t, saslAddr)
		if _, err := doWire(t, c, authenticate("\x00alice\x00alice-secret")); err == nil {
			t.Fatal("SaslAuthenticate before SaslHandshake was answered")
		}
	})
	t.Run("bad SCRAM message fails and closes", func(t *testing.T) {
		c := dialWire(t, saslAddr)
		if _, err := doWire(t, c, handshake(1, "SCRAM-SHA-256")); err != nil {
			t.Fatal(err)
		}
		resp, err := doWire(t, c, authenticate("y,,n=alice,r=abc"))
		if err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("bad client-first: %+v, %v", resp, err)
		}
		if _, err := doWire(t, c, metadata); err == nil {
			t.Fatal("the connection stayed open after a failed authentication")
		}
	})
	if ok := testutil.ToFloat64(m.m.authentications.WithLabelValues("PLAIN", "ok")); ok != 1 {
		t.Errorf("PLAIN successes counted %v, want 1", ok)
	}
	if failed := testutil.ToFloat64(m.m.authentications.WithLabelValues("SCRAM-SHA-256", "failed")); failed != 1 {
		t.Errorf("SCRAM-SHA-256 failures counted %v, want 1", failed)
	}
	if refused := testutil.ToFloat64(m.m.authentications.WithLabelValues("none", "refused")); refused != 2 {
		t.Errorf("refused connections counted %v, want 2", refused)
	}
}

// TestSASLFranzClient: franz-go's SCRAM and PLAIN clients log in, and its
// Metadata on the SASL listener names the SASL listener's address.
func TestSASLFranzClient(t *testing.T) {
	_, saslAddr, _ := saslServer(t)
	for name, mech := range map[string]kgo.Opt{
		"PLAIN":         kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		"SCRAM-SHA-256": kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()),
		"SCRAM-SHA-512": kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), mech, kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
		})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.RequestRetries(0),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("ping with a wrong password: %v", err)
	}
}

func TestBrokerAddressPerListener(t *testing.T) {
	b := Broker{ID: 1, Host: "10.0.0.1", Port: 9092, Endpoints: []Endpoint{
		{Listener: "PLAINTEXT", Host: "10.0.0.1", Port: 9092},
		{Listener: "EXTERNAL", Host: "kafka.example", Port: 9093},
	}}
	for listener, want := range map[string]string{"EXTERNAL": "kafka.example:9093", "PLAINTEXT": "10.0.0.1:9092", "OTHER": "10.0.0.1:9092"} {
		host, port := b.Address(listener)
		if got := net.JoinHostPort(host, strconv.Itoa(int(port))); got != want {
			t.Errorf("listener %s: %s, want %s", listener, got, want)
		}
	}
}
