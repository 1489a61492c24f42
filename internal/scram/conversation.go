package scram

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrAuthentication is wrapped by every failure a client causes: bad
// syntax, an unknown user, a wrong proof. Its text is safe to send back;
// the wrapped detail is for the server's log.
var ErrAuthentication = errors.New("scram: authentication failed")

// MaxMessageBytes bounds one client message. RFC 5802 messages are well
// under a kilobyte for any sane user name; Kafka's limit on a SASL token
// is larger, but nothing a client needs comes close to this.
const MaxMessageBytes = 4096

// Lookup returns a user's credential for the conversation's mechanism, or
// false when there is none.
type Lookup func(user string) (Credential, bool)

// Conversation is the server side of one SCRAM exchange: Step takes the
// client-first message, then the client-final message. It is not safe for
// concurrent use.
type Conversation struct {
	mech   *Mechanism
	lookup Lookup
	// newNonce makes the server's part of the nonce; tests set it to
	// replay RFC 7677's example.
	newNonce func() (string, error)

	step            int
	user            string
	cred            Credential
	nonce           string // client nonce + server nonce
	clientFirstBare string
	serverFirst     string
}

// NewConversation starts an exchange that authenticates against lookup.
func NewConversation(m *Mechanism, lookup Lookup) *Conversation {
	return &Conversation{mech: m, lookup: lookup, newNonce: randomNonce}
}

// User is the authenticated user once Done, or the one claimed before.
func (c *Conversation) User() string { return c.user }

// Done reports whether the client proved its password.
func (c *Conversation) Done() bool { return c.step == 2 }

// Step consumes the client's next message and returns the server's answer.
// Any error ends the conversation; it wraps ErrAuthentication when the
// client is at fault.
func (c *Conversation) Step(msg []byte) ([]byte, error) {
	if len(msg) > MaxMessageBytes {
		return nil, fmt.Errorf("%w: message of %d bytes, more than %d", ErrAuthentication, len(msg), MaxMessageBytes)
	}
	switch c.step {
	case 0:
		return c.first(string(msg))
	case 1:
		return c.final(string(msg))
	}
	return nil, fmt.Errorf("%w: message after the exchange ended", ErrAuthentication)
}

func (c *Conversation) first(msg string) ([]byte, error) {
	cf, err := ParseClientFirst(msg)
	if err != nil {
		return nil, err
	}
	cred, ok := c.lookup(cf.User)
	if !ok || cred.Mechanism != c.mech {
		return nil, fmt.Errorf("%w: no %s credential for user %q", ErrAuthentication, c.mech.name, cf.User)
	}
	server, err := c.newNonce()
	if err != nil {
		return nil, err
	}
	c.step, c.user, c.cred = 1, cf.User, cred
	c.nonce = cf.Nonce + server
	c.clientFirstBare = cf.Bare
	c.serverFirst = "r=" + c.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(c.serverFirst), nil
}

func (c *Conversation) final(msg string) ([]byte, error) {
	c.step = 3 // whatever happens, no further steps
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	if cf.ChannelBinding != "biws" {
		return nil, fmt.Errorf("%w: channel binding %q, want biws (n,,)", ErrAuthentication, cf.ChannelBinding)
	}
	// RFC 5802 wants the nonce repeated exactly; Kafka checks only that it
	// ends with the server-first nonce, and librdkafka relies on that: it
	// sends its own nonce again in front. The server's random part is
	// still there, so the proof (over the whole message) stays fresh.
	if !strings.HasSuffix(cf.Nonce, c.nonce) {
		return nil, fmt.Errorf("%w: client-final nonce does not end with the server's", ErrAuthentication)
	}
	auth := []byte(c.clientFirstBare + "," + c.serverFirst + "," + cf.WithoutProof)
	signature := c.mech.hmac(c.cred.StoredKey, auth)
	if len(cf.Proof) != len(signature) {
		return nil, fmt.Errorf("%w: proof of %d bytes, want %d", ErrAuthentication, len(cf.Proof), len(signature))
	}
	clientKey := make([]byte, len(signature))
	subtle.XORBytes(clientKey, cf.Proof, signature)
	h := c.mech.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), c.cred.StoredKey) != 1 {
		return nil, fmt.Errorf("%w: wrong password for user %q", ErrAuthentication, c.user)
	}
	c.step = 2
	return []byte("v=" + base64.StdEncoding.EncodeToString(c.mech.hmac(c.cred.ServerKey, auth))), nil
}

// randomNonce is 24 random bytes in base64: printable and comma-free, as
// RFC 5802 requires of a nonce.
func randomNonce() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("scram: nonce: %w", err)
	}
	return base64.RawStdEncoding.EncodeToString(b[:]), nil
}

// ClientFirst is a parsed client-first message.
type ClientFirst struct {
	User  string // decoded saslname
	Nonce string
	Bare  string // client-first-message-bare, as sent, for the AuthMessage
}

// ParseClientFirst parses a client-first message. Extensions after the
// nonce are accepted and ignored (Kafka's delegation-token extension
// "tokenauth" included: there are no delegation tokens here, so a token
// simply fails as an unknown user).
func ParseClientFirst(msg string) (ClientFirst, error) {
	bad := func(why string) (ClientFirst, error) {
		return ClientFirst{}, fmt.Errorf("%w: client-first message: %s", ErrAuthentication, why)
	}
	header, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return bad("no gs2 header")
	}
	if header != "n" {
		return bad(fmt.Sprintf("channel binding flag %q: only n is supported", header))
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return bad("no gs2 header")
	}
	fields := strings.Split(bare, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "n=") || !strings.HasPrefix(fields[1], "r=") {
		return bad("want n=<user>,r=<nonce>")
	}
	user, err := decodeName(fields[0][2:])
	if err != nil || user == "" {
		return bad("bad user name")
	}
	if authzid != "" {
		if !strings.HasPrefix(authzid, "a=") {
			return bad("bad authzid")
		}
		// Kafka accepts an authorization id only when it names the user.
		if az, err := decodeName(authzid[2:]); err != nil || az != user {
			return bad("authzid differs from the user")
		}
	}
	nonce := fields[1][2:]
	if !validNonce(nonce) {
		return bad("bad nonce")
	}
	for _, ext := range fields[2:] {
		if k, _, ok := strings.Cut(ext, "="); !ok || k == "" {
			return bad("bad extension")
		}
	}
	return ClientFirst{User: user, Nonce: nonce, Bare: bare}, nil
}

// ClientFinal is a parsed client-final message.
type ClientFinal struct {
	ChannelBinding string // base64, as sent
	Nonce          string
	Proof          []byte
	WithoutProof   string // client-final-message-without-proof
}

// ParseClientFinal parses a client-final message.
func ParseClientFinal(msg string) (ClientFinal, error) {
	bad := func(why string) (ClientFinal, error) {
		return ClientFinal{}, fmt.Errorf("%w: client-final message: %s", ErrAuthentication, why)
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return bad("no proof")
	}
	without, proof := msg[:i], msg[i+3:]
	fields := strings.Split(without, ",")
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "c=") || !strings.HasPrefix(fields[1], "r=") {
		return bad("want c=<binding>,r=<nonce>")
	}
	p, err := base64.StdEncoding.DecodeString(proof)
	if err != nil || len(p) == 0 {
		return bad("proof is not base64")
	}
	return ClientFinal{ChannelBinding: fields[0][2:], Nonce: fields[1][2:], Proof: p, WithoutProof: without}, nil
}

// decodeName undoes RFC 5802's saslname escaping: "=2C" is ",", "=3D" is
// "=", and no other "=" may appear.
func decodeName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("bad escape")
		}
		i += 2
	}
	return b.String(), nil
}

// validNonce: printable ASCII except ",", as RFC 5802 defines it.
func validNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}
