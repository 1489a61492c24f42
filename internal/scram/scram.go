// Package scram holds the server side of SCRAM (RFC 5802) for the two
// mechanisms Kafka offers, SCRAM-SHA-256 (RFC 7677) and SCRAM-SHA-512, and
// the stored form of a user's credential.
//
// A Credential never holds the password: only the salt, the iteration
// count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and
// ServerKey = HMAC(SaltedPassword, "Server Key"), as RFC 5802 section 3
// names them. That is what Kafka keeps in its metadata log and what
// AlterUserScramCredentials carries (the client derives SaltedPassword).
//
// A Conversation is one authentication exchange, owned by one connection's
// goroutine; nothing here is shared between goroutines apart from the
// immutable Mechanism values.
//
// Message layout (RFC 5802 section 7), the only form accepted:
//
//	client-first:  n,[a=<authzid>],n=<user>,r=<client nonce>[,<ext>=<value>...]
//	server-first:  r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
//	client-final:  c=biws,r=<client nonce><server nonce>,p=<base64 proof>
//	server-final:  v=<base64 server signature>
//
// Channel binding is not offered, so the gs2 header must be "n," (Kafka
// refuses "y" and "p" too); "c=biws" is base64 of "n,,".
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
)

// Iteration bounds Kafka applies to AlterUserScramCredentials; the minimum
// is also RFC 7677's.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ErrUnknownMechanism is returned for a mechanism name other than
// SCRAM-SHA-256 and SCRAM-SHA-512.
var ErrUnknownMechanism = errors.New("scram: unknown mechanism")

// Mechanism is one SCRAM hash family.
type Mechanism struct {
	name string
	// code is Kafka's ScramMechanism number in Describe/AlterUserScramCredentials.
	code int8
	hash func() hash.Hash
	size int
}

// The two mechanisms Kafka defines.
var (
	SHA256 = &Mechanism{name: "SCRAM-SHA-256", code: 1, hash: sha256.New, size: sha256.Size}
	SHA512 = &Mechanism{name: "SCRAM-SHA-512", code: 2, hash: sha512.New, size: sha512.Size}
)

// Mechanisms lists the supported mechanisms in Kafka's code order.
func Mechanisms() []*Mechanism { return []*Mechanism{SHA256, SHA512} }

// Name is the SASL mechanism name, e.g. SCRAM-SHA-256.
func (m *Mechanism) Name() string { return m.name }

// Code is Kafka's ScramMechanism number: 1 SHA-256, 2 SHA-512.
func (m *Mechanism) Code() int8 { return m.code }

// KeySize is the length of SaltedPassword, StoredKey and ServerKey.
func (m *Mechanism) KeySize() int { return m.size }

// ByName finds a mechanism by its SASL name.
func ByName(name string) (*Mechanism, error) {
	for _, m := range Mechanisms() {
		if m.name == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownMechanism, name)
}

// ByCode finds a mechanism by Kafka's ScramMechanism number.
func ByCode(code int8) (*Mechanism, error) {
	for _, m := range Mechanisms() {
		if m.code == code {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: code %d", ErrUnknownMechanism, code)
}

// Credential is what the server keeps of one user's password under one
// mechanism.
type Credential struct {
	Mechanism  *Mechanism
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// SaltPassword is Hi(password, salt, iterations) of RFC 5802: PBKDF2 with
// the mechanism's HMAC.
func (m *Mechanism) SaltPassword(password string, salt []byte, iterations int) []byte {
	k, err := pbkdf2.Key(m.hash, password, salt, iterations, m.size)
	if err != nil {
		// Only FIPS mode's key-length and salt checks can fail, and the
		// sizes here are fixed by the hash.
		panic(fmt.Sprintf("scram: pbkdf2: %v", err))
	}
	return k
}

// FromSaltedPassword derives the stored credential from SaltedPassword,
// which is what AlterUserScramCredentials sends.
func (m *Mechanism) FromSaltedPassword(salted, salt []byte, iterations int) Credential {
	clientKey := m.hmac(salted, []byte("Client Key"))
	h := m.hash()
	h.Write(clientKey)
	return Credential{Mechanism: m, Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: h.Sum(nil), ServerKey: m.hmac(salted, []byte("Server Key"))}
}

// NewCredential derives a credential from a password.
func (m *Mechanism) NewCredential(password string, salt []byte, iterations int) Credential {
	return m.FromSaltedPassword(m.SaltPassword(password, salt, iterations), salt, iterations)
}

// Matches reports whether password is the one c was made from, in time
// that does not depend on where the keys differ. PLAIN uses it: it costs
// one PBKDF2 of the stored iteration count.
func (c Credential) Matches(password string) bool {
	d := c.Mechanism.NewCredential(password, c.Salt, c.Iterations)
	return subtle.ConstantTimeCompare(d.StoredKey, c.StoredKey) == 1
}

// Validate checks a credential read from the store or the network.
func (c Credential) Validate() error {
	switch {
	case c.Mechanism == nil:
		return errors.New("scram: credential without a mechanism")
	case len(c.Salt) == 0:
		return errors.New("scram: empty salt")
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Errorf("scram: %d iterations: must be in [%d, %d]", c.Iterations, MinIterations, MaxIterations)
	case len(c.StoredKey) != c.Mechanism.size || len(c.ServerKey) != c.Mechanism.size:
		return fmt.Errorf("scram: %s keys must be %d bytes", c.Mechanism.name, c.Mechanism.size)
	}
	return nil
}

func (m *Mechanism) hmac(key, msg []byte) []byte {
	h := hmac.New(m.hash, key)
	h.Write(msg)
	return h.Sum(nil)
}
