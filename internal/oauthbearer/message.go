// Package oauthbearer serves the server side of SASL OAUTHBEARER (RFC 7628)
// as Kafka does (KIP-255, KIP-768): it parses the client's initial
// response, validates the JWT bearer token it carries against the keys of
// a JWKS (a file or an http(s) URL), and builds the error challenge a
// failed validation answers.
//
// Client initial response (RFC 7628 section 3.1; ^A is the byte 0x01):
//
//	gs2-header                 kvpairs                                         end
//	n,[a=<authzid>],  ^A  auth=Bearer <token> ^A  [<key>=<value> ^A]...  ^A
//
// Only "n" (no channel binding) is accepted, as Kafka does. A failed
// validation is answered with the JSON error challenge of section 3.2.2
// ({"status":"invalid_token"}); the client answers it with a lone ^A and
// the authentication then fails.
//
// A Validator is safe for concurrent use; its key source refreshes
// itself on the goroutine its owner runs (FileKeys.Run, URLKeys.Run).
package oauthbearer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrMessage marks a client message that is not a well-formed OAUTHBEARER
// initial response.
var ErrMessage = errors.New("oauthbearer: malformed client response")

// MaxMessageBytes bounds a client response; Kafka's SASL frame limit
// (sasl.server.max.receive.size) is larger, but no token needs this much.
const MaxMessageBytes = 64 << 10

// ClientResponse is a parsed initial response.
type ClientResponse struct {
	// AuthzID is the gs2 authorization id, empty when not given.
	AuthzID string
	// Token is the bearer token, the JWT.
	Token string
	// Extensions are the SASL extensions (KIP-342), other than auth.
	Extensions map[string]string
}

// ParseClientResponse parses msg; errors wrap ErrMessage.
func ParseClientResponse(msg []byte) (ClientResponse, error) {
	var r ClientResponse
	if len(msg) > MaxMessageBytes {
		return r, fmt.Errorf("%w: %d bytes, more than %d", ErrMessage, len(msg), MaxMessageBytes)
	}
	header, rest, ok := bytes.Cut(msg, []byte{1})
	if !ok {
		return r, fmt.Errorf("%w: no 0x01 after the gs2 header", ErrMessage)
	}
	authz, err := parseGS2Header(string(header))
	if err != nil {
		return r, err
	}
	r.AuthzID = authz
	// The pairs end with an empty one: the message ends ^A^A.
	if !bytes.HasSuffix(rest, []byte{1, 1}) {
		return r, fmt.Errorf("%w: not terminated by 0x01 0x01", ErrMessage)
	}
	pairs := strings.Split(string(rest[:len(rest)-2]), "\x01")
	for _, kv := range pairs {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || !validKey(key) || !validValue(value) {
			return r, fmt.Errorf("%w: bad key-value pair %q", ErrMessage, truncate(kv))
		}
		if key == "auth" {
			if r.Token != "" {
				return r, fmt.Errorf("%w: auth given twice", ErrMessage)
			}
			scheme, token, ok := strings.Cut(value, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || !validToken(token) {
				return r, fmt.Errorf("%w: auth is not \"Bearer <token>\"", ErrMessage)
			}
			r.Token = token
			continue
		}
		if _, dup := r.Extensions[key]; dup {
			return r, fmt.Errorf("%w: extension %q given twice", ErrMessage, key)
		}
		if r.Extensions == nil {
			r.Extensions = map[string]string{}
		}
		r.Extensions[key] = value
	}
	if r.Token == "" {
		return r, fmt.Errorf("%w: no auth=Bearer pair", ErrMessage)
	}
	return r, nil
}

// parseGS2Header checks "n,[a=authzid]," and returns the authzid, with
// its =2C and =3D escapes (RFC 5801) undone.
func parseGS2Header(h string) (string, error) {
	flag, rest, ok := strings.Cut(h, ",")
	if !ok || flag != "n" {
		return "", fmt.Errorf("%w: gs2 header %q: want n,[a=authzid],", ErrMessage, truncate(h))
	}
	authz, tail, ok := strings.Cut(rest, ",")
	if !ok || tail != "" {
		return "", fmt.Errorf("%w: gs2 header %q: want n,[a=authzid],", ErrMessage, truncate(h))
	}
	if authz == "" {
		return "", nil
	}
	name, ok := strings.CutPrefix(authz, "a=")
	if !ok || name == "" {
		return "", fmt.Errorf("%w: gs2 authzid %q", ErrMessage, truncate(authz))
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch {
		case name[i] != '=':
			b.WriteByte(name[i])
		case strings.HasPrefix(name[i:], "=2C"):
			b.WriteByte(',')
			i += 2
		case strings.HasPrefix(name[i:], "=3D"):
			b.WriteByte('=')
			i += 2
		default:
			return "", fmt.Errorf("%w: bad escape in gs2 authzid", ErrMessage)
		}
	}
	return b.String(), nil
}

// validKey: RFC 7628's key = 1*(ALPHA).
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// validValue: RFC 7628's value = *(VCHAR / SP / HTAB / CR / LF).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// validToken: RFC 6750's b64token = 1*(ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/") *"=".
func validToken(t string) bool {
	body := strings.TrimRight(t, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('a' <= c|0x20 && c|0x20 <= 'z') && !('0' <= c && c <= '9') && !strings.ContainsRune("-._~+/", rune(c)) {
			return false
		}
	}
	return true
}

// ErrorChallenge is the server's answer to a token it refuses (RFC 7628
// section 3.2.2): {"status":"invalid_token"}, with the scope the client
// should ask for when one is configured.
func ErrorChallenge(status, scope string) []byte {
	c := struct {
		Status string `json:"status"`
		Scope  string `json:"scope,omitempty"`
	}{status, scope}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // two strings always marshal
	}
	return b
}

// truncate keeps error messages short whatever the client sent.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
