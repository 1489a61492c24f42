package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ErrToken marks a token refused: malformed, badly signed, expired, or
// not for this server. Its message is logged, never sent to the client.
var ErrToken = errors.New("oauthbearer: token refused")

// errUnknownKey is a signature by a key the key set does not hold: a URL
// key source fetches the set again before refusing (KIP-768).
var errUnknownKey = errors.New("no key of the JWKS matches the token's kid and alg")

// algorithm is a JWS signature algorithm this package verifies. HS*
// (whose key would be a shared secret) and none are refused on purpose:
// a JWKS holds public keys, and a token must not choose how it is checked.
type algorithm struct {
	hash crypto.Hash
	// ec: ECDSA on the named curve; else RSA, PSS when pss is set.
	ec    string
	pss   bool
	isRSA bool
}

var algorithms = map[string]algorithm{
	"RS256": {hash: crypto.SHA256, isRSA: true},
	"RS384": {hash: crypto.SHA384, isRSA: true},
	"RS512": {hash: crypto.SHA512, isRSA: true},
	"PS256": {hash: crypto.SHA256, isRSA: true, pss: true},
	"PS384": {hash: crypto.SHA384, isRSA: true, pss: true},
	"PS512": {hash: crypto.SHA512, isRSA: true, pss: true},
	"ES256": {hash: crypto.SHA256, ec: "P-256"},
	"ES384": {hash: crypto.SHA384, ec: "P-384"},
	"ES512": {hash: crypto.SHA512, ec: "P-521"},
}

// jws is a compact JWS split and decoded, signature not yet checked.
type jws struct {
	header struct {
		Alg  string   `json:"alg"`
		Kid  string   `json:"kid"`
		Crit []string `json:"crit"`
	}
	signingInput string
	claims       []byte
	signature    []byte
}

func parseJWS(token string) (*jws, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a compact JWS (header.payload.signature)", ErrToken)
	}
	j := &jws{signingInput: parts[0] + "." + parts[1]}
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrToken, err)
	}
	if err := json.Unmarshal(header, &j.header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrToken, err)
	}
	// RFC 7515 section 4.1.11: a critical extension not understood
	// makes the token invalid; none is understood here.
	if len(j.header.Crit) > 0 {
		return nil, fmt.Errorf("%w: critical header extensions %v", ErrToken, j.header.Crit)
	}
	if j.claims, err = base64.RawURLEncoding.DecodeString(parts[1]); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrToken, err)
	}
	if j.signature, err = base64.RawURLEncoding.DecodeString(parts[2]); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrToken, err)
	}
	return j, nil
}

// keyFor picks the key of ks that verifies j: the one with j's kid, or
// without a kid the only key that fits the algorithm.
func (j *jws) keyFor(ks *KeySet, alg algorithm) (crypto.PublicKey, error) {
	var found []crypto.PublicKey
	for _, k := range ks.Keys {
		if k.Alg != "" && k.Alg != j.header.Alg || !alg.fits(k.Pub) {
			continue
		}
		if j.header.Kid != "" && k.ID != j.header.Kid {
			continue
		}
		found = append(found, k.Pub)
	}
	if len(found) != 1 {
		if len(found) > 1 {
			return nil, fmt.Errorf("%w: %d keys fit a token without kid", ErrToken, len(found))
		}
		return nil, errUnknownKey
	}
	return found[0], nil
}

func (a algorithm) fits(pub crypto.PublicKey) bool {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return a.isRSA
	case *ecdsa.PublicKey:
		return a.ec != "" && k.Curve.Params().Name == a.ec
	}
	return false
}

func (a algorithm) verify(pub crypto.PublicKey, signingInput string, sig []byte) error {
	digest := hashOf(a.hash, signingInput)
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if a.pss {
			return rsa.VerifyPSS(k, a.hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
		}
		return rsa.VerifyPKCS1v15(k, a.hash, digest, sig)
	case *ecdsa.PublicKey:
		// JWS carries r||s, each the curve's size (RFC 7518 section 3.4).
		size := (k.Curve.Params().BitSize + 7) / 8
		if len(sig) != 2*size {
			return errors.New("ECDSA signature of the wrong length")
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return errors.New("ECDSA signature does not verify")
		}
		return nil
	}
	return errors.New("unsupported key type")
}

func hashOf(h crypto.Hash, input string) []byte {
	switch h {
	case crypto.SHA256:
		d := sha256.Sum256([]byte(input))
		return d[:]
	case crypto.SHA384:
		d := sha512.Sum384([]byte(input))
		return d[:]
	case crypto.SHA512:
		d := sha512.Sum512([]byte(input))
		return d[:]
	}
	panic("oauthbearer: hash not in the algorithm table")
}
