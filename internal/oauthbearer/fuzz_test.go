package oauthbearer_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/strata-streaming/strata/internal/oauthbearer"
	"github.com/strata-streaming/strata/internal/oauthtest"
)

// FuzzValidate: a token made of arbitrary header, claims and signature
// never panics the validator and is never accepted, since only the
// issuer's key signs; the seeds are a real token's parts.
func FuzzValidate(f *testing.F) {
	iss := oauthtest.NewIssuer(f, "idp")
	enc := base64.RawURLEncoding
	f.Add([]byte(`{"alg":"RS256","kid":"rsa-1"}`), []byte(`{"sub":"a","exp":9999999999}`), []byte("sig"))
	f.Add([]byte(`{"alg":"ES256"}`), []byte(`{"sub":"a","exp":1e300,"aud":["x"]}`), make([]byte, 64))
	f.Add([]byte(`{"alg":"none"}`), []byte(`{"sub":"a","exp":9999999999}`), []byte{})
	f.Add([]byte(`{"alg":"RS256","crit":["x"]}`), []byte(`{"exp":"x","iat":-1}`), []byte{})
	ks, err := oauthbearer.ParseJWKS(iss.JWKS())
	if err != nil {
		f.Fatal(err)
	}
	v := oauthbearer.NewValidator(oauthbearer.DefaultConfig(), oauthbearer.StaticKeys{Set: ks})
	f.Fuzz(func(t *testing.T, header, claims, sig []byte) {
		token := enc.EncodeToString(header) + "." + enc.EncodeToString(claims) + "." + enc.EncodeToString(sig)
		tok, err := v.Validate(context.Background(), token)
		if err == nil {
			t.Fatalf("accepted a forged token %q as %+v", token, tok)
		}
		if !errors.Is(err, oauthbearer.ErrToken) {
			t.Fatalf("%v does not wrap ErrToken", err)
		}
	})
}

// FuzzParseJWKS: a JWKS from a URL is outside input; parsing never panics,
// and what it accepts is usable keys only.
func FuzzParseJWKS(f *testing.F) {
	f.Add(oauthtest.NewIssuer(f, "idp").JWKS())
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		ks, err := oauthbearer.ParseJWKS(doc)
		if err == nil && len(ks.Keys) == 0 {
			t.Fatalf("accepted %q with no key", doc)
		}
	})
}
