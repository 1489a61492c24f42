package oauthbearer

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/oauthtest"
)

// TestURLKeysRotation: a token signed by a key the agent has not fetched
// yet is accepted once the provider serves it, without waiting for the
// periodic refresh; a JWKS over the size bound is refused and the keys in
// use are kept.
func TestURLKeysRotation(t *testing.T) {
	old, rotated := oauthtest.NewIssuer(t, "idp"), oauthtest.NewIssuer(t, "idp")
	var doc atomic.Pointer[[]byte]
	first := old.JWKS()
	doc.Store(&first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(*doc.Load()) }))
	defer srv.Close()
	src, err := NewSource(SourceConfig{URL: srv.URL, RefreshInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	src.(*urlKeys).minInterval = 0
	if err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := NewValidator(DefaultConfig(), src)
	// The provider rotates to a key of a new kid and signs with it.
	rotated.RSAKeyID = "rsa-2"
	token := rotated.Token(t, rotated.Claims("alice", "kafka", time.Hour))
	if _, err := v.Validate(context.Background(), token); err == nil {
		t.Fatal("a token of a key not yet published was accepted")
	}
	second := rotated.JWKS()
	doc.Store(&second)
	if _, err := v.Validate(context.Background(), token); err != nil {
		t.Fatalf("after the provider published the key: %v", err)
	}
	huge := make([]byte, MaxJWKSBytes+10)
	doc.Store(&huge)
	src.Refresh(context.Background())
	if src.Keys() == nil || len(src.Keys().Keys) != 2 {
		t.Fatal("an oversized JWKS replaced the keys in use")
	}
}
