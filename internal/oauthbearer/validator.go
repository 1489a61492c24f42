package oauthbearer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Config is what a token must satisfy besides its signature; the zero
// values of ExpectedIssuer and ExpectedAudience check nothing, as Kafka's
// sasl.oauthbearer.expected.issuer and .audience do when unset.
type Config struct {
	// ExpectedIssuer, when set, must equal the iss claim.
	ExpectedIssuer string
	// ExpectedAudience, when set, must hold one of the aud claim's values.
	ExpectedAudience []string
	// SubClaimName names the claim that is the principal
	// (sasl.oauthbearer.sub.claim.name); "sub" by default.
	SubClaimName string
	// ScopeClaimName names the claim of the token's scopes
	// (sasl.oauthbearer.scope.claim.name); "scope" by default. Scopes are
	// logged, not enforced, as in Kafka.
	ScopeClaimName string
	// ClockSkew is the leeway given to exp, nbf and iat
	// (sasl.oauthbearer.clock.skew.seconds).
	ClockSkew time.Duration
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{SubClaimName: "sub", ScopeClaimName: "scope", ClockSkew: 30 * time.Second}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.SubClaimName == "":
		return errors.New("sasl-oauthbearer-sub-claim-name: must not be empty")
	case c.ScopeClaimName == "":
		return errors.New("sasl-oauthbearer-scope-claim-name: must not be empty")
	case c.ClockSkew < 0 || c.ClockSkew > time.Hour:
		return fmt.Errorf("sasl-oauthbearer-clock-skew %s: must be between 0 and 1h", c.ClockSkew)
	}
	return nil
}

// Token is a validated token.
type Token struct {
	// Principal is the value of the SubClaimName claim.
	Principal string
	// Expiry is the exp claim; the session it opens must not outlive it.
	Expiry time.Time
	Scope  []string
}

// KeySource gives the current key set; Refresh asks for a newer one when a
// token names a key it lacks, and may do nothing (a file source, or one
// refreshed moments ago).
type KeySource interface {
	Keys() *KeySet
	Refresh(ctx context.Context)
}

// Validator validates tokens.
type Validator struct {
	cfg  Config
	keys KeySource
	now  func() time.Time
}

// NewValidator returns a validator of tokens signed by the keys of src.
func NewValidator(cfg Config, src KeySource) *Validator {
	return &Validator{cfg: cfg, keys: src, now: time.Now}
}

// Validate checks token's signature and claims; errors wrap ErrToken.
func (v *Validator) Validate(ctx context.Context, token string) (Token, error) {
	j, err := parseJWS(token)
	if err != nil {
		return Token{}, err
	}
	alg, ok := algorithms[j.header.Alg]
	if !ok {
		return Token{}, fmt.Errorf("%w: alg %q: want one of RS256/384/512, PS256/384/512, ES256/384/512", ErrToken, j.header.Alg)
	}
	ks := v.keys.Keys()
	var pub any
	if ks != nil {
		pub, err = j.keyFor(ks, alg)
	}
	if ks == nil || errors.Is(err, errUnknownKey) {
		// A provider that rotates its keys signs with the new one before
		// every server has fetched it.
		v.keys.Refresh(ctx)
		if ks = v.keys.Keys(); ks == nil {
			return Token{}, fmt.Errorf("%w: no JWKS loaded yet", ErrToken)
		}
		pub, err = j.keyFor(ks, alg)
	}
	if errors.Is(err, errUnknownKey) {
		return Token{}, fmt.Errorf("%w: kid %q alg %s: %v", ErrToken, j.header.Kid, j.header.Alg, err)
	}
	if err != nil {
		return Token{}, err
	}
	if err := alg.verify(pub, j.signingInput, j.signature); err != nil {
		return Token{}, fmt.Errorf("%w: signature: %v", ErrToken, err)
	}
	return v.checkClaims(j.claims)
}

// checkClaims applies Config to a token whose signature verified.
func (v *Validator) checkClaims(payload []byte) (Token, error) {
	var claims map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&claims); err != nil {
		return Token{}, fmt.Errorf("%w: claims: %v", ErrToken, err)
	}
	now := v.now()
	skew := v.cfg.ClockSkew
	exp, ok, err := numericDate(claims, "exp")
	switch {
	case err != nil:
		return Token{}, err
	case !ok:
		return Token{}, fmt.Errorf("%w: no exp claim", ErrToken)
	case !now.Before(exp.Add(skew)):
		return Token{}, fmt.Errorf("%w: expired at %s", ErrToken, exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok, err := numericDate(claims, "nbf"); err != nil {
		return Token{}, err
	} else if ok && nbf.After(now.Add(skew)) {
		return Token{}, fmt.Errorf("%w: not valid before %s", ErrToken, nbf.UTC().Format(time.RFC3339))
	}
	if iat, ok, err := numericDate(claims, "iat"); err != nil {
		return Token{}, err
	} else if ok && (iat.After(now.Add(skew)) || iat.After(exp)) {
		return Token{}, fmt.Errorf("%w: issued at %s, in the future or after it expires", ErrToken, iat.UTC().Format(time.RFC3339))
	}
	if v.cfg.ExpectedIssuer != "" {
		if iss, _ := stringClaim(claims, "iss"); iss != v.cfg.ExpectedIssuer {
			return Token{}, fmt.Errorf("%w: issuer %q, want %q", ErrToken, truncate(iss), v.cfg.ExpectedIssuer)
		}
	}
	if len(v.cfg.ExpectedAudience) > 0 {
		aud, _ := stringsClaim(claims, "aud", false)
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.cfg.ExpectedAudience, a) }) {
			return Token{}, fmt.Errorf("%w: audience %q, want one of %q", ErrToken, aud, v.cfg.ExpectedAudience)
		}
	}
	sub, ok := stringClaim(claims, v.cfg.SubClaimName)
	if !ok || strings.TrimSpace(sub) == "" {
		return Token{}, fmt.Errorf("%w: no %s claim", ErrToken, v.cfg.SubClaimName)
	}
	scope, _ := stringsClaim(claims, v.cfg.ScopeClaimName, true)
	return Token{Principal: sub, Expiry: exp, Scope: scope}, nil
}

// numericDate reads a NumericDate claim (seconds since the epoch, maybe
// fractional); ok is false when the claim is absent.
func numericDate(claims map[string]json.RawMessage, name string) (t time.Time, ok bool, err error) {
	raw, present := claims[name]
	if !present {
		return time.Time{}, false, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return time.Time{}, false, fmt.Errorf("%w: %s is not a number", ErrToken, name)
	}
	f, err := n.Float64()
	// Past year 9999 or before 1970 is no date a token means.
	if err != nil || f < 0 || f > 253402300799 || math.IsNaN(f) {
		return time.Time{}, false, fmt.Errorf("%w: %s %s is not a date", ErrToken, name, truncate(n.String()))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

func stringClaim(claims map[string]json.RawMessage, name string) (string, bool) {
	var s string
	if raw, ok := claims[name]; !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// stringsClaim reads a claim that is a string or an array of strings; with
// split, a string is a list separated by spaces, as scope is (RFC 8693
// section 4.2).
func stringsClaim(claims map[string]json.RawMessage, name string, split bool) ([]string, bool) {
	raw, ok := claims[name]
	if !ok {
		return nil, false
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	if !split {
		return []string{s}, true
	}
	return strings.Fields(s), true
}
