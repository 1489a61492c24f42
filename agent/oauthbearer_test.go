package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/oauthtest"
)

// TestLoadOAuthBearer: a JWKS file is loaded at start and a broken one
// stops the agent; an unreachable URL only warns, since the provider may
// come up later; OAUTHBEARER joins the enabled mechanisms.
func TestLoadOAuthBearer(t *testing.T) {
	iss := oauthtest.NewIssuer(t, "idp")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, iss.JWKS(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(url string) error {
		cfg := DefaultConfig()
		cfg.OAuthBearer.JWKSEndpointURL = url
		a := &Agent{cfg: cfg, logger: slog.New(slog.DiscardHandler)}
		v, _, err := a.loadOAuthBearer(context.Background())
		if err == nil && v == nil {
			t.Fatalf("%s: no validator", url)
		}
		return err
	}
	if err := load("file://" + good); err != nil {
		t.Fatalf("good file: %v", err)
	}
	if err := load("file://" + bad); err == nil || !strings.Contains(err.Error(), "--sasl-oauthbearer-jwks-endpoint-url") {
		t.Fatalf("a JWKS file with only an HMAC key: %v", err)
	}
	// Nothing listens on port 1 of loopback.
	if err := load("http://127.0.0.1:1/jwks.json"); err != nil {
		t.Fatalf("unreachable URL: %v", err)
	}
	cfg := DefaultConfig()
	cfg.OAuthBearer.JWKSEndpointURL, cfg.OAuthBearer.JWKSRefresh = "file://"+good, time.Hour
	if m := cfg.saslMechanisms(); !strings.Contains(strings.Join(m, ","), "OAUTHBEARER") {
		t.Fatalf("mechanisms %v lack OAUTHBEARER", m)
	}
	if m := DefaultConfig().saslMechanisms(); strings.Contains(strings.Join(m, ","), "OAUTHBEARER") {
		t.Fatalf("OAUTHBEARER enabled without a JWKS: %v", m)
	}
}
