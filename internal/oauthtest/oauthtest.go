// Package oauthtest is an OAuth identity provider for tests of OAUTHBEARER:
// signing keys made with Go's crypto, their JWKS, and the JWTs they sign.
package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
	"time"
)

// Issuer signs tokens with an RSA key (kid "rsa-1" unless changed) and an
// ECDSA P-256 key (kid "ec-1").
type Issuer struct {
	Name string // the iss of its tokens
	// RSAKeyID and ECKeyID are the keys' kids in JWKS and Token.
	RSAKeyID, ECKeyID string
	rsa               *rsa.PrivateKey
	ec                *ecdsa.PrivateKey
}

// NewIssuer makes the keys.
func NewIssuer(t testing.TB, name string) *Issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{Name: name, RSAKeyID: "rsa-1", ECKeyID: "ec-1", rsa: rk, ec: ek}
}

// JWKS is the issuer's public keys as a JWKS document.
func (i *Issuer) JWKS() []byte {
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	ecPub := i.ec.PublicKey
	raw, _ := ecPub.Bytes() // 0x04 | x | y
	doc := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": i.RSAKeyID, "use": "sig", "alg": "RS256", "n": b64(i.rsa.N.Bytes()), "e": b64(big.NewInt(int64(i.rsa.E)).Bytes())},
		{"kty": "EC", "kid": i.ECKeyID, "use": "sig", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])},
	}}
	b, _ := json.Marshal(doc)
	return b
}

// Claims returns the usual claims of a token for sub, valid for ttl.
func (i *Issuer) Claims(sub, audience string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": i.Name, "sub": sub, "aud": audience, "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "scope": "kafka"}
}

// Token signs claims with the RSA key (RS256).
func (i *Issuer) Token(t testing.TB, claims map[string]any) string {
	return i.Sign(t, "RS256", i.RSAKeyID, claims)
}

// Sign signs claims with alg (RS256, RS512 or ES256) under kid.
func (i *Issuer) Sign(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	var sig []byte
	switch alg {
	case "RS256":
		d := sha256.Sum256([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, i.rsa, crypto.SHA256, d[:])
	case "RS512":
		d := sha512.Sum512([]byte(input))
		sig, err = rsa.SignPKCS1v15(rand.Reader, i.rsa, crypto.SHA512, d[:])
	case "ES256":
		d := sha256.Sum256([]byte(input))
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, i.ec, d[:])
		if err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
		}
	default:
		t.Fatalf("oauthtest: cannot sign with %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc.EncodeToString(sig)
}

// Unsigned is claims under alg none, which every server must refuse.
func Unsigned(claims map[string]any) string {
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(payload) + "."
}
