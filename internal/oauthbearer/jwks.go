package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// MaxJWKSBytes bounds a JWKS document read from a file or a URL.
const MaxJWKSBytes = 1 << 20

// minRSABits refuses RSA keys too short to trust (RFC 7518 section 3.3);
// maxRSABits, keys so long that verifying each login would cost the agent
// more than any provider uses.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// Key is one verification key of a JWKS.
type Key struct {
	ID  string // kid; may be empty
	Alg string // the key's alg, empty when the JWKS does not say
	Pub crypto.PublicKey
}

// KeySet is a parsed JWKS. It is never changed once parsed, so it is
// shared without locks.
type KeySet struct {
	Keys []Key
}

// jwk holds the members of RFC 7517/7518 keys that matter here.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// ParseJWKS parses a JWKS document ({"keys":[...]}). Keys that cannot
// verify signatures here (encryption keys, other key types, short RSA
// keys) are skipped, as an identity provider's set may hold them; a set
// with no usable key is an error, since it would refuse every token.
func ParseJWKS(doc []byte) (*KeySet, error) {
	if len(doc) > MaxJWKSBytes {
		return nil, fmt.Errorf("oauthbearer: JWKS of %d bytes, more than %d", len(doc), MaxJWKSBytes)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		return nil, fmt.Errorf("oauthbearer: JWKS: %w", err)
	}
	ks := &KeySet{}
	var skipped []error
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		pub, err := k.publicKey()
		if err != nil {
			skipped = append(skipped, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err))
			continue
		}
		ks.Keys = append(ks.Keys, Key{ID: k.Kid, Alg: k.Alg, Pub: pub})
	}
	if len(ks.Keys) == 0 {
		return nil, fmt.Errorf("oauthbearer: JWKS has no usable signing key: %w", errors.Join(skipped...))
	}
	return ks, nil
}

func (k jwk) publicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err := decodeBigInt(k.N)
		if err != nil {
			return nil, fmt.Errorf("n: %w", err)
		}
		e, err := decodeBigInt(k.E)
		if err != nil {
			return nil, fmt.Errorf("e: %w", err)
		}
		if n.BitLen() < minRSABits || n.BitLen() > maxRSABits {
			return nil, fmt.Errorf("RSA key of %d bits, not between %d and %d", n.BitLen(), minRSABits, maxRSABits)
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
			return nil, errors.New("bad RSA exponent")
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		curve := curveByName(k.Crv)
		if curve == nil {
			return nil, fmt.Errorf("curve %q: want P-256, P-384 or P-521", k.Crv)
		}
		x, err := decodeBigInt(k.X)
		if err != nil {
			return nil, fmt.Errorf("x: %w", err)
		}
		y, err := decodeBigInt(k.Y)
		if err != nil {
			return nil, fmt.Errorf("y: %w", err)
		}
		// ParseUncompressedPublicKey refuses points off the curve; an
		// ecdsa.PublicKey built by hand would not be checked.
		size := (curve.Params().BitSize + 7) / 8
		if len(x.Bytes()) > size || len(y.Bytes()) > size {
			return nil, errors.New("EC point coordinates too long")
		}
		raw := append([]byte{4}, append(x.FillBytes(make([]byte, size)), y.FillBytes(make([]byte, size))...)...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
		if err != nil {
			return nil, err
		}
		return pub, nil
	}
	return nil, fmt.Errorf("key type %q: want RSA or EC", k.Kty)
}

func curveByName(name string) elliptic.Curve {
	switch name {
	case "P-256":
		return elliptic.P256()
	case "P-384":
		return elliptic.P384()
	case "P-521":
		return elliptic.P521()
	}
	return nil
}

func decodeBigInt(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("empty")
	}
	return new(big.Int).SetBytes(b), nil
}
