package scram

import (
	"bytes"
	"fmt"
)

// Plain is a parsed SASL PLAIN message (RFC 4616):
//
//	[authzid] NUL authcid NUL passwd
//
// Kafka's PLAIN accepts an authorization id only when it is empty or names
// the user, and so does ParsePlain.
type Plain struct {
	User, Password string
}

// ParsePlain parses a PLAIN message; errors wrap ErrAuthentication.
func ParsePlain(msg []byte) (Plain, error) {
	if len(msg) > MaxMessageBytes {
		return Plain{}, fmt.Errorf("%w: PLAIN message of %d bytes, more than %d", ErrAuthentication, len(msg), MaxMessageBytes)
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return Plain{}, fmt.Errorf("%w: PLAIN message: want authzid NUL user NUL password", ErrAuthentication)
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" || password == "" {
		return Plain{}, fmt.Errorf("%w: PLAIN message: empty user or password", ErrAuthentication)
	}
	if authz != "" && authz != user {
		return Plain{}, fmt.Errorf("%w: PLAIN message: authorization id differs from the user", ErrAuthentication)
	}
	return Plain{User: user, Password: password}, nil
}
