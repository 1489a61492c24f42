package scram

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// DefaultIterations is Kafka's kafka-storage default for --add-scram.
const DefaultIterations = MinIterations

// Bootstrap is one --add-scram value: a user whose credential is created at
// start when absent.
type Bootstrap struct {
	User       string
	Credential Credential
}

// ParseBootstrap reads Kafka's kafka-storage --add-scram form,
//
//	SCRAM-SHA-256=[name=admin,password=admin-secret]
//	SCRAM-SHA-512=[name=admin,password="a secret",iterations=8192,salt="c2FsdA=="]
//
// and derives the credential; a missing salt is random. Values may be
// quoted with double quotes (to hold a comma).
func ParseBootstrap(s string) (Bootstrap, error) {
	name, body, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return Bootstrap{}, fmt.Errorf("%q: want MECHANISM=[name=...,password=...]", s)
	}
	m, err := ByName(name)
	if err != nil {
		return Bootstrap{}, err
	}
	fields, err := splitFields(body[1 : len(body)-1])
	if err != nil {
		return Bootstrap{}, fmt.Errorf("%q: %v", s, err)
	}
	var user, password string
	var salt []byte
	iterations := DefaultIterations
	for k, v := range fields {
		switch k {
		case "name":
			user = v
		case "password":
			password = v
		case "iterations":
			if iterations, err = strconv.Atoi(v); err != nil {
				return Bootstrap{}, fmt.Errorf("%q: iterations %q is not a number", s, v)
			}
		case "salt":
			if salt, err = base64.StdEncoding.DecodeString(v); err != nil || len(salt) == 0 {
				return Bootstrap{}, fmt.Errorf("%q: salt must be non-empty base64", s)
			}
		default:
			return Bootstrap{}, fmt.Errorf("%q: unknown field %q (want name, password, iterations, salt)", s, k)
		}
	}
	switch {
	case user == "":
		return Bootstrap{}, fmt.Errorf("%q: name is missing", s)
	case password == "":
		return Bootstrap{}, fmt.Errorf("%q: password is missing", s)
	case iterations < MinIterations || iterations > MaxIterations:
		return Bootstrap{}, fmt.Errorf("%q: iterations %d: must be in [%d, %d]", s, iterations, MinIterations, MaxIterations)
	}
	if salt == nil {
		if salt, err = NewSalt(); err != nil {
			return Bootstrap{}, err
		}
	}
	return Bootstrap{User: user, Credential: m.NewCredential(password, salt, iterations)}, nil
}

// NewSalt returns a random 32-byte salt.
func NewSalt() ([]byte, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("scram: salt: %w", err)
	}
	return salt, nil
}

// splitFields splits k=v,k="v,with,commas" pairs.
func splitFields(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("want key=value at %q", s)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				return nil, fmt.Errorf("unterminated quote in %s", k)
			}
			v, rest = rest[1:1+end], rest[2+end:]
			if rest != "" && !strings.HasPrefix(rest, ",") {
				return nil, fmt.Errorf("want a comma after %s's quoted value", k)
			}
			rest = strings.TrimPrefix(rest, ",")
		} else {
			v, rest, _ = strings.Cut(rest, ",")
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		out[k] = v
		s = rest
	}
	return out, nil
}
