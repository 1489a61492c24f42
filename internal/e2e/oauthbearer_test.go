package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/oauthtest"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// oauthAudience and oauthIssuer are what the OAUTHBEARER agents expect.
const (
	oauthAudience = "strata"
	oauthIssuer   = "https://idp.test"
)

// startOAuthAgent runs an agent with SASL_SSL and SASL_PLAINTEXT listeners
// whose OAUTHBEARER trusts iss's JWKS, served over HTTP on loopback as a
// provider's is.
func startOAuthAgent(t *testing.T, iss *oauthtest.Issuer, extra ...string) (*testagent.Agent, *tlstest.CA) {
	t.Helper()
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(iss.JWKS())
	}))
	t.Cleanup(jwks.Close)
	ca := tlstest.NewCA(t, "strata test CA")
	files := ca.Issue(t, "agent", pkix.Name{CommonName: "strata-agent"})
	a := testagent.Start(t, testagent.Options{ExtraListeners: []string{"SASL_SSL", "SASL_PLAINTEXT"}, ExtraArgs: append([]string{
		"--tls-cert-file", files.CertFile, "--tls-key-file", files.KeyFile,
		"--sasl-oauthbearer-jwks-endpoint-url", jwks.URL + "/jwks.json",
		"--sasl-oauthbearer-expected-issuer", oauthIssuer,
		"--sasl-oauthbearer-expected-audience", oauthAudience,
	}, extra...)})
	return a, ca
}

// oauthClient is a franz-go client of a's SASL_SSL listener whose OAUTHBEARER
// tokens come from token, asked again at each authentication.
func oauthClient(t *testing.T, a *testagent.Agent, ca *tlstest.CA, token func() string, opts ...kgo.Opt) *kgo.Client {
	return newKgo(t, a.ListenerAddr("SASL_SSL"), append([]kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}),
		kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: token()}, nil })),
	}, opts...)...)
}

// TestOAuthBearer: franz-go produces and consumes over SASL_SSL with a token
// the agent validates against a JWKS URL; tokens with a bad signature, an
// expired one, or the wrong issuer or audience get SASL_AUTHENTICATION_FAILED.
func TestOAuthBearer(t *testing.T) {
	iss := oauthtest.NewIssuer(t, oauthIssuer)
	a, ca := startOAuthAgent(t, iss)
	good := func() string { return iss.Token(t, iss.Claims("orders", oauthAudience, time.Hour)) }

	cl := oauthClient(t, a, ca, good)
	const topic = "oauth-roundtrip"
	createTopic(t, kadm.NewClient(cl), topic, 1, nil)
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte("with a token")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := oauthClient(t, a, ca, good, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	fs := consumer.PollRecords(ctxT(t, opTimeout), 1)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if got := fs.Records(); len(got) != 1 || string(got[0].Value) != "with a token" {
		t.Fatalf("consumed %v", got)
	}

	forger := oauthtest.NewIssuer(t, oauthIssuer)
	for name, token := range map[string]string{
		"bad signature":  forger.Token(t, forger.Claims("orders", oauthAudience, time.Hour)),
		"expired":        iss.Token(t, map[string]any{"iss": oauthIssuer, "aud": oauthAudience, "sub": "orders", "exp": time.Now().Add(-time.Hour).Unix()}),
		"wrong issuer":   oauthtest.NewIssuer(t, "https://evil.test").Token(t, iss.Claims("orders", oauthAudience, time.Hour)),
		"wrong audience": iss.Token(t, iss.Claims("orders", "billing", time.Hour)),
	} {
		t.Run(name, func(t *testing.T) {
			cl := oauthClient(t, a, ca, func() string { return token }, kgo.RequestRetries(0))
			if err := cl.Ping(ctxT(t, opTimeout)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
	m, err := metricstext.Scrape(ctxT(t, opTimeout), "http://"+a.HTTPAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Value("strata_kafka_sasl_authentications_total", "mechanism", "OAUTHBEARER", "outcome", "failed"); v < 4 {
		t.Fatalf("OAUTHBEARER failures counted %v, want at least 4", v)
	}
}

// TestOAuthBearerReauthentication: with --connections-max-reauth 2s,
// franz-go keeps producing over one connection for more than three session
// lifetimes, re-authenticating on its own, and the agent counts the
// re-authentications and closes no connection for an expired session.
func TestOAuthBearerReauthentication(t *testing.T) {
	iss := oauthtest.NewIssuer(t, oauthIssuer)
	const lifetime = 2 * time.Second
	a, ca := startOAuthAgent(t, iss, "--connections-max-reauth", lifetime.String())
	cl := oauthClient(t, a, ca, func() string { return iss.Token(t, iss.Claims("orders", oauthAudience, time.Hour)) })
	const topic = "oauth-reauth"
	createTopic(t, kadm.NewClient(cl), topic, 1, nil)
	end := time.Now().Add(3*lifetime + lifetime/2)
	produced := 0
	for time.Now().Before(end) {
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", produced)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", produced, err)
		}
		produced++
		time.Sleep(50 * time.Millisecond) // pacing: sessions end in real time
	}
	m, err := metricstext.Scrape(ctxT(t, opTimeout), "http://"+a.HTTPAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	reauth, _ := m.Value("strata_kafka_sasl_authentications_total", "mechanism", "OAUTHBEARER", "outcome", "reauthenticated")
	expired, _ := m.Value("strata_kafka_sasl_authentications_total", "mechanism", "OAUTHBEARER", "outcome", "expired")
	t.Logf("%d records over %v; %v re-authentications", produced, 3*lifetime+lifetime/2, reauth)
	if reauth < 3 || expired != 0 {
		t.Fatalf("%v re-authentications and %v expired sessions over 3.5 lifetimes; want at least 3 and none", reauth, expired)
	}
	if !strings.Contains(a.Logs(), "OAUTHBEARER JWKS loaded") {
		t.Error("the agent did not log loading the JWKS")
	}
}

// TestOAuthBearerConfluentKafkaPython: confluent-kafka-python (librdkafka)
// with an oauth_cb returning a token this test minted creates a topic,
// produces and reads back over SASL_SSL; a token of another issuer is
// refused with SASL_AUTHENTICATION_FAILED's message.
func TestOAuthBearerConfluentKafkaPython(t *testing.T) {
	lib := confluentKafkaPython(t)
	iss := oauthtest.NewIssuer(t, oauthIssuer)
	a, ca := startOAuthAgent(t, iss)
	const count = 20
	var want strings.Builder
	for i := range count {
		fmt.Fprintf(&want, "key-%d:value-%d\n", i, i)
	}
	r := clientRun{Bootstrap: a.ListenerAddr("SASL_SSL"), Security: "SASL_SSL", CA: ca.CertFile, Mechanism: "OAUTHBEARER",
		Topic: "oauth-confluent-kafka-python", Count: count, Mode: "roundtrip",
		Token: iss.Token(t, iss.Claims("orders", oauthAudience, time.Hour))}
	stdout, stderr, ok := lib.run(t, r)
	if !ok {
		t.Fatalf("%s over SASL_SSL/OAUTHBEARER failed:\n%s", lib.name, stderr)
	}
	if stdout != want.String() {
		t.Fatalf("%s read back differs:\n%s", lib.name, firstLineDiff(want.String(), stdout))
	}

	r.Mode, r.Token = "connect", oauthtest.NewIssuer(t, oauthIssuer).Token(t, iss.Claims("orders", oauthAudience, time.Hour))
	stdout, stderr, ok = lib.run(t, r)
	if ok {
		t.Fatalf("%s connected with a forged token:\n%s", lib.name, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ERROR "+lib.authFailure+" ") || !strings.Contains(last, "invalid_token") {
		t.Fatalf("%s's error for a forged token is not SASL_AUTHENTICATION_FAILED with the error challenge:\n%s", lib.name, stderr)
	}
}

// TestOAuthBearerGarbageTokens: random OAUTHBEARER messages, some shaped
// like a JWT, fail at once or after the error challenge, and close their
// connection; the agent keeps serving, and a real token still logs in.
func TestOAuthBearerGarbageTokens(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	iss := oauthtest.NewIssuer(t, oauthIssuer)
	a, _ := startOAuthAgent(t, iss)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	random := func(n int) []byte {
		b := make([]byte, rng.IntN(n))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	b64 := func(n int) string { return base64.RawURLEncoding.EncodeToString(random(n)) }
	for i := range 60 {
		var msg []byte
		switch i % 3 {
		case 0:
			msg = random(600)
		case 1: // a well-formed message around a token of random parts
			msg = []byte("n,,\x01auth=Bearer " + b64(200) + "." + b64(200) + "." + b64(300) + "\x01\x01")
		case 2: // a real header and random claims
			msg = []byte("n,,\x01auth=Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0." + b64(300) + "." + b64(256) + "\x01\x01")
		}
		c := saslConn(t, addr, "OAUTHBEARER")
		resp, err := doE2E(t, c, &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: msg})
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode == 0 {
			if !strings.Contains(string(r.SASLAuthBytes), "invalid_token") {
				t.Fatalf("message %d %q was accepted: %+v", i, msg, r)
			}
			if resp, err = doE2E(t, c, &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: []byte{1}}); err != nil {
				t.Fatalf("message %d, acknowledging the challenge: %v", i, err)
			}
			r = resp.(*kmsg.SASLAuthenticateResponse)
		}
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("message %d answered %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
		expectClosed(t, c)
		c.Close()
	}
	cl := newKgo(t, addr, kgo.SASL(oauth.Auth{Token: iss.Token(t, iss.Claims("orders", oauthAudience, time.Hour))}.AsMechanism()))
	if err := cl.Ping(ctxT(t, opTimeout)); err != nil {
		t.Fatalf("a real token after the garbage: %v", err)
	}
}
