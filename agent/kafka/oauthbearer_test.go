package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/oauthbearer"
	"github.com/strata-streaming/strata/internal/oauthtest"
	iscram "github.com/strata-streaming/strata/internal/scram"
)

// oauthServer serves a SASL_PLAINTEXT listener with every mechanism:
// OAUTHBEARER trusts iss's keys and wants issuer "https://idp.test" and
// audience "kafka"; alice (password "alice-secret") has SCRAM credentials.
func oauthServer(t *testing.T, iss *oauthtest.Issuer, maxReauth time.Duration) (addr string, m *Metrics) {
	t.Helper()
	ks, err := oauthbearer.ParseJWKS(iss.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	vcfg := oauthbearer.DefaultConfig()
	vcfg.ExpectedIssuer, vcfg.ExpectedAudience = "https://idp.test", []string{"kafka"}
	cfg := DefaultConfig()
	cfg.SASLEnabledMechanisms = AllMechanisms()
	cfg.OAuthBearer = oauthbearer.NewValidator(vcfg, oauthbearer.StaticKeys{Set: ks})
	cfg.ConnectionsMaxReauth = maxReauth
	users := fakeUsers{creds: map[string][]iscram.Credential{
		"alice": {iscram.SHA256.NewCredential("alice-secret", []byte("salt-256"), 4096)},
		"bob":   {iscram.SHA256.NewCredential("bob-secret", []byte("salt-256"), 4096)},
	}}
	b := newAdminBackend()
	m = NewMetrics(prometheus.NewRegistry())
	srv := New(cfg, Backends{Cluster: b, Topics: b, TopicAdmin: b, Users: users}, nil, m)
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(ln, Listener{Name: "SASL_PLAINTEXT", Protocol: SASLPlaintext}) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), m
}

func handshakeReq(mech string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = 1, mech
	return r
}

func authenticateReq(token []byte) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = 2, token
	return r
}

func bearer(token string) []byte { return []byte("n,,\x01auth=Bearer " + token + "\x01\x01") }

// authWire authenticates a raw connection and returns the answer.
func authWire(t *testing.T, c *kafkawire.Conn, mech string, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if resp, err := doWire(t, c, handshakeReq(mech)); err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		t.Fatalf("handshake %s: %+v, %v", mech, resp, err)
	}
	resp, err := doWire(t, c, authenticateReq(token))
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return resp.(*kmsg.SASLAuthenticateResponse)
}

func metadataV12() *kmsg.MetadataRequest {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 12
	return r
}

// TestOAuthBearerRefused: each refused token gets the error challenge, then
// SASL_AUTHENTICATION_FAILED, then the connection closes; franz-go's client
// sees SASL_AUTHENTICATION_FAILED too.
func TestOAuthBearerRefused(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "https://idp.test")
	forger := oauthtest.NewIssuer(t, "https://idp.test")
	addr, m := oauthServer(t, iss, 0)
	claims := func(edit func(map[string]any)) map[string]any {
		c := iss.Claims("alice", "kafka", time.Hour)
		edit(c)
		return c
	}
	for name, token := range map[string]string{
		"bad signature": forger.Token(t, claims(func(map[string]any) {})),
		"expired": iss.Token(t, claims(func(c map[string]any) {
			c["exp"], c["iat"] = time.Now().Add(-time.Hour).Unix(), time.Now().Add(-2*time.Hour).Unix()
		})),
		"wrong issuer":   iss.Token(t, claims(func(c map[string]any) { c["iss"] = "https://evil.test" })),
		"wrong audience": iss.Token(t, claims(func(c map[string]any) { c["aud"] = "billing" })),
		"alg none":       oauthtest.Unsigned(claims(func(map[string]any) {})),
	} {
		t.Run(name, func(t *testing.T) {
			c := dialWire(t, addr)
			resp := authWire(t, c, "OAUTHBEARER", bearer(token))
			if resp.ErrorCode != 0 || !strings.Contains(string(resp.SASLAuthBytes), `"status":"invalid_token"`) {
				t.Fatalf("first answer %+v: want the error challenge", resp)
			}
			r, err := doWire(t, c, authenticateReq([]byte{1}))
			if err != nil || r.(*kmsg.SASLAuthenticateResponse).ErrorCode != kerr.SaslAuthenticationFailed.Code {
				t.Fatalf("answer to the acknowledgement: %+v, %v", r, err)
			}
			if _, err := doWire(t, c, metadataV12()); err == nil {
				t.Fatal("the connection stayed open after a refused token")
			}

			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
				kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("franz-go's ping with a refused token: %v", err)
			}
		})
	}
	t.Run("authorization id of another principal fails at once", func(t *testing.T) {
		c := dialWire(t, addr)
		msg := []byte("n,a=bob,\x01auth=Bearer " + iss.Token(t, claims(func(map[string]any) {})) + "\x01\x01")
		if resp := authWire(t, c, "OAUTHBEARER", msg); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("authzid bob for alice's token: %+v", resp)
		}
	})
	t.Run("malformed message fails at once", func(t *testing.T) {
		c := dialWire(t, addr)
		if resp := authWire(t, c, "OAUTHBEARER", []byte("n,,auth=Bearer x")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("malformed: %+v", resp)
		}
	})
	if failed := testutil.ToFloat64(m.m.authentications.WithLabelValues("OAUTHBEARER", "failed")); failed < 10 {
		t.Errorf("OAUTHBEARER failures counted %v, want at least 10", failed)
	}
}

// TestOAuthBearerFranz: franz-go authenticates with a token signed by
// either key, and the session lifetime it is told is the token's.
func TestOAuthBearerFranz(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "https://idp.test")
	addr, _ := oauthServer(t, iss, 0)
	for _, alg := range []string{"RS256", "ES256"} {
		kid := map[string]string{"RS256": "rsa-1", "ES256": "ec-1"}[alg]
		token := iss.Sign(t, alg, kid, iss.Claims("alice", "kafka", time.Hour))
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = cl.Ping(ctx)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("%s: ping: %v", alg, err)
		}
	}
	c := dialWire(t, addr)
	resp := authWire(t, c, "OAUTHBEARER", bearer(iss.Token(t, iss.Claims("alice", "kafka", time.Hour))))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis < 3590_000 || resp.SessionLifetimeMillis > 3600_000 {
		t.Fatalf("answer %+v: want the token's remaining hour as the session lifetime", resp)
	}
}

// TestReauthentication: with a session limit, franz-go re-authenticates
// on its connection and keeps working past several lifetimes.
func TestReauthentication(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "https://idp.test")
	const lifetime = 1500 * time.Millisecond
	addr, m := oauthServer(t, iss, lifetime)
	for name, mech := range map[string]kgo.Opt{
		"PLAIN": kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		"OAUTHBEARER": kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: iss.Token(t, iss.Claims("alice", "kafka", time.Hour))}, nil
		})),
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), mech)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			end := time.Now().Add(4 * lifetime)
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				// The seed connection: the fake cluster's brokers are not dialable.
				_, err := cl.SeedBrokers()[0].Request(ctx, metadataV12())
				cancel()
				if err != nil {
					t.Fatalf("metadata: %v", err)
				}
				time.Sleep(100 * time.Millisecond) // pacing only: sessions end in real time
			}
			if n := testutil.ToFloat64(m.m.authentications.WithLabelValues(name, "reauthenticated")); n < 2 {
				t.Fatalf("%v re-authentications over 4 lifetimes, want at least 2", n)
			}
			if n := testutil.ToFloat64(m.m.authentications.WithLabelValues(name, "expired")); n != 0 {
				t.Fatalf("%v connections closed for expired sessions", n)
			}
		})
	}
}

// TestReauthenticationRules: a client that does not re-authenticate is
// closed at its next request after the session ends; re-authentication
// may not change the principal or the mechanism.
func TestReauthenticationRules(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "https://idp.test")
	const lifetime = 500 * time.Millisecond
	addr, m := oauthServer(t, iss, lifetime)
	plainToken := func(user string) []byte { return []byte("\x00" + user + "\x00" + user + "-secret") }

	t.Run("expired session closes", func(t *testing.T) {
		c := dialWire(t, addr)
		if resp := authWire(t, c, "PLAIN", plainToken("alice")); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
			t.Fatalf("authenticate: %+v", resp)
		}
		if _, err := doWire(t, c, metadataV12()); err != nil {
			t.Fatalf("metadata within the session: %v", err)
		}
		time.Sleep(lifetime + 100*time.Millisecond) // let the session end
		if _, err := doWire(t, c, metadataV12()); err == nil {
			t.Fatal("a request after the session ended was answered")
		}
		if n := testutil.ToFloat64(m.m.authentications.WithLabelValues("PLAIN", "expired")); n != 1 {
			t.Fatalf("expired sessions counted %v, want 1", n)
		}
	})
	t.Run("token expiry bounds the session", func(t *testing.T) {
		c := dialWire(t, addr)
		// exp is whole seconds, so the token has at most a second left.
		claims := iss.Claims("alice", "kafka", 0)
		claims["exp"] = time.Now().Add(time.Second).Unix()
		resp := authWire(t, c, "OAUTHBEARER", bearer(iss.Token(t, claims)))
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis > 1000 {
			t.Fatalf("authenticate: %+v: want at most the token's second", resp)
		}
	})
	t.Run("another principal fails", func(t *testing.T) {
		c := dialWire(t, addr)
		authWire(t, c, "PLAIN", plainToken("alice"))
		resp := authWire(t, c, "PLAIN", plainToken("bob"))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
			t.Fatalf("re-authentication as bob: %+v", resp)
		}
		if _, err := doWire(t, c, metadataV12()); err == nil {
			t.Fatal("the connection stayed open")
		}
	})
	t.Run("another mechanism fails", func(t *testing.T) {
		c := dialWire(t, addr)
		authWire(t, c, "PLAIN", plainToken("alice"))
		resp := authWire(t, c, "OAUTHBEARER", bearer(iss.Token(t, iss.Claims("alice", "kafka", time.Hour))))
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("re-authentication with another mechanism: %+v", resp)
		}
	})
	t.Run("same principal renews", func(t *testing.T) {
		c := dialWire(t, addr)
		authWire(t, c, "PLAIN", plainToken("alice"))
		time.Sleep(lifetime + 100*time.Millisecond) // past the first session
		if resp := authWire(t, c, "PLAIN", plainToken("alice")); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication: %+v", resp)
		}
		if _, err := doWire(t, c, metadataV12()); err != nil {
			t.Fatalf("metadata in the renewed session: %v", err)
		}
	})
}
