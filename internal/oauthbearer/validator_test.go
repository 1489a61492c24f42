package oauthbearer_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/oauthbearer"
	"github.com/strata-streaming/strata/internal/oauthtest"
)

func staticValidator(t *testing.T, iss *oauthtest.Issuer, cfg oauthbearer.Config) *oauthbearer.Validator {
	t.Helper()
	ks, err := oauthbearer.ParseJWKS(iss.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	return oauthbearer.NewValidator(cfg, oauthbearer.StaticKeys{Set: ks})
}

// TestValidate: each check refuses what it should and nothing else.
func TestValidate(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "https://idp.test")
	other := oauthtest.NewIssuer(t, "https://idp.test")
	cfg := oauthbearer.DefaultConfig()
	cfg.ExpectedIssuer, cfg.ExpectedAudience = "https://idp.test", []string{"kafka", "strata"}
	v := staticValidator(t, iss, cfg)
	good := func() map[string]any { return iss.Claims("alice", "strata", time.Hour) }
	with := func(k string, val any) map[string]any {
		c := good()
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	now := time.Now()
	for _, tc := range []struct {
		name  string
		token string
		ok    bool
	}{
		{"RS256", iss.Token(t, good()), true},
		{"RS512 under a key whose alg says RS256", iss.Sign(t, "RS512", "rsa-1", good()), false},
		{"ES256", iss.Sign(t, "ES256", "ec-1", good()), true},
		{"ES256 without kid", iss.Sign(t, "ES256", "", good()), true},
		{"audience in a list", iss.Token(t, with("aud", []string{"other", "kafka"})), true},
		{"expired within the skew", iss.Token(t, map[string]any{"iss": iss.Name, "sub": "alice", "aud": "kafka", "exp": now.Add(-10 * time.Second).Unix()}), true},
		{"issued after it expires", iss.Token(t, map[string]any{"iss": iss.Name, "sub": "alice", "aud": "kafka", "exp": now.Add(time.Minute).Unix(), "iat": now.Add(2 * time.Minute).Unix()}), false},
		{"bad signature", other.Token(t, good()), false},
		{"unknown kid", iss.Sign(t, "ES256", "ec-9", good()), false},
		{"alg none", oauthtest.Unsigned(good()), false},
		{"expired", iss.Token(t, with("exp", now.Add(-time.Minute).Unix())), false},
		{"no exp", iss.Token(t, with("exp", nil)), false},
		{"exp not a number", iss.Token(t, with("exp", "tomorrow")), false},
		{"not yet valid", iss.Token(t, with("nbf", now.Add(time.Minute).Unix())), false},
		{"issued in the future", iss.Token(t, with("iat", now.Add(time.Minute).Unix())), false},
		{"wrong issuer", iss.Token(t, with("iss", "https://evil.test")), false},
		{"no issuer", iss.Token(t, with("iss", nil)), false},
		{"wrong audience", iss.Token(t, with("aud", "other")), false},
		{"no sub", iss.Token(t, with("sub", nil)), false},
		{"not a JWT", "abc.def", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := v.Validate(context.Background(), tc.token)
			if tc.ok != (err == nil) {
				t.Fatalf("Validate: %+v, %v; want ok=%v", tok, err, tc.ok)
			}
			if err != nil && !errors.Is(err, oauthbearer.ErrToken) {
				t.Fatalf("%v does not wrap ErrToken", err)
			}
			if err == nil && (tok.Principal != "alice" || tok.Expiry.IsZero()) {
				t.Fatalf("token %+v", tok)
			}
		})
	}
	// HS256 under the RSA modulus as a shared secret: the classic
	// algorithm confusion attack.
	hs := strings.Split(iss.Token(t, good()), ".")
	hs[0] = "eyJhbGciOiJIUzI1NiIsImtpZCI6InJzYS0xIn0" // {"alg":"HS256","kid":"rsa-1"}
	if _, err := v.Validate(context.Background(), strings.Join(hs, ".")); err == nil {
		t.Fatal("HS256 accepted")
	}
}

// TestSubClaimName: the principal comes from the configured claim.
func TestSubClaimName(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "idp")
	cfg := oauthbearer.DefaultConfig()
	cfg.SubClaimName = "client_id"
	v := staticValidator(t, iss, cfg)
	c := iss.Claims("alice", "kafka", time.Hour)
	c["client_id"] = "svc-orders"
	tok, err := v.Validate(context.Background(), iss.Token(t, c))
	if err != nil || tok.Principal != "svc-orders" || !maps.Equal(map[string]bool{tok.Scope[0]: true}, map[string]bool{"kafka": true}) {
		t.Fatalf("%+v, %v", tok, err)
	}
}

// TestURLSource: keys come from an HTTP endpoint, which is fetched again
// when a token names a key the agent has not seen.
func TestURLSource(t *testing.T) {
	first, second := oauthtest.NewIssuer(t, "idp"), oauthtest.NewIssuer(t, "idp")
	var serving atomic.Pointer[[]byte]
	doc := first.JWKS()
	serving.Store(&doc)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Write(*serving.Load())
	}))
	defer srv.Close()
	src, err := oauthbearer.NewSource(oauthbearer.SourceConfig{URL: srv.URL + "/jwks", RefreshInterval: time.Hour, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := oauthbearer.NewValidator(oauthbearer.DefaultConfig(), src)
	if _, err := v.Validate(context.Background(), first.Token(t, first.Claims("alice", "kafka", time.Hour))); err != nil {
		t.Fatal(err)
	}
	// The provider rotates to keys of the same kids; the first token of
	// the new key is refused only if the refetch is within
	// minFetchInterval of the load, which it is here: rate limiting.
	doc2 := second.JWKS()
	serving.Store(&doc2)
	if _, err := v.Validate(context.Background(), second.Sign(t, "ES256", "ec-unknown", second.Claims("bob", "kafka", time.Hour))); err == nil {
		t.Fatal("a token of an unknown kid was accepted")
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1: refetches on unknown kids must be spaced", n)
	}
}

// TestFileSource: a JWKS file is read at Load; a broken file is refused.
func TestFileSource(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "idp")
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := oauthbearer.NewSource(oauthbearer.SourceConfig{URL: "file://" + path, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := oauthbearer.NewValidator(oauthbearer.DefaultConfig(), src)
	if _, err := v.Validate(context.Background(), iss.Token(t, iss.Claims("alice", "kafka", time.Hour))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Load(context.Background()); err == nil {
		t.Fatal("a JWKS without keys was loaded")
	}
	for _, bad := range []string{"ftp://x/jwks", "file://host/jwks", "http:///jwks"} {
		if _, err := oauthbearer.NewSource(oauthbearer.SourceConfig{URL: bad, RefreshInterval: time.Hour}); err == nil {
			t.Errorf("NewSource(%q) accepted", bad)
		}
	}
}
