package metadata

// SCRAM credentials, one object per user:
//
//	users/<user>.json  {"version":1,"name":"alice","scram":[{"mechanism":"SCRAM-SHA-256",
//	                    "iterations":4096,"salt":"<b64>","stored_key":"<b64>","server_key":"<b64>"}]}
//
// <user> is the name path-escaped (url.PathEscape), so any Kafka user name
// makes one key and the object holds the name unescaped. Only salts and
// derived keys are stored, never a password (internal/scram makes them;
// the agent checks them as it reads them). Changes are
// CAS on the object's ETag; a user whose last credential is deleted keeps
// an object with an empty list, so a delete racing an upsert cannot lose
// the upsert. Agents cache the credentials and re-read the objects whose
// ETag changed (agent/users.go).

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/strata-streaming/strata/tiering/objstore"
)

const usersPrefix = "users/"

// UsersPrefix is where user objects live; agents list it to find changes.
const UsersPrefix = usersPrefix

func userKey(name string) string { return usersPrefix + url.PathEscape(name) + jsonSuffix }

type userObject struct {
	Version int               `json:"version"`
	Name    string            `json:"name"`
	SCRAM   []ScramCredential `json:"scram"`
}

// ScramCredential is one stored SCRAM credential, as internal/scram makes
// it: the mechanism's name, the iteration count, the salt and the derived
// keys. This package stores it as it is; the agent checks it when it
// reads it (a credential that does not check out is a corrupt object).
type ScramCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// User is one user's credentials.
type User struct {
	Name  string
	SCRAM []ScramCredential
}

// ReadUser decodes the user object at key (as listed under UsersPrefix).
func (s *Store) ReadUser(ctx context.Context, key string) (User, error) {
	var obj userObject
	if _, err := s.getObject(ctx, key, &obj); err != nil {
		return User{}, err
	}
	return obj.decode(key)
}

func (obj userObject) decode(key string) (User, error) {
	if userKey(obj.Name) != key {
		return User{}, &CorruptError{Key: key, Err: fmt.Errorf("user %q in an object named for another", obj.Name)}
	}
	return User{Name: obj.Name, SCRAM: obj.SCRAM}, nil
}

// Users returns every user that has at least one credential.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	var keys []string
	if err := s.bucket.List(ctx, usersPrefix, func(key string, _ objstore.Attributes) error {
		if strings.HasSuffix(key, jsonSuffix) {
			keys = append(keys, key)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	var out []User
	for _, key := range keys {
		u, err := s.ReadUser(ctx, key)
		if objstore.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(u.SCRAM) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}

// UpsertScramCredential creates or replaces name's credential for its
// mechanism. With onlyIfAbsent an existing credential of that mechanism is
// kept, and created reports whether c was written (--add-scram).
func (s *Store) UpsertScramCredential(ctx context.Context, name string, entry ScramCredential, onlyIfAbsent bool) (created bool, err error) {
	switch {
	case name == "":
		return false, errors.New("metadata: empty user name")
	case entry.Mechanism == "":
		return false, errors.New("metadata: a SCRAM credential without a mechanism")
	}
	err = s.updateUser(ctx, name, func(obj *userObject) bool {
		i := slices.IndexFunc(obj.SCRAM, func(o ScramCredential) bool { return o.Mechanism == entry.Mechanism })
		switch {
		case i >= 0 && onlyIfAbsent:
			created = false
			return false
		case i >= 0:
			obj.SCRAM[i] = entry
		default:
			obj.SCRAM = append(obj.SCRAM, entry)
		}
		created = true
		return true
	})
	return created, err
}

// DeleteScramCredential removes name's credential of the named
// mechanism, or fails with ErrUnknownCredential.
func (s *Store) DeleteScramCredential(ctx context.Context, name, mechanism string) error {
	found := false
	err := s.updateUser(ctx, name, func(obj *userObject) bool {
		n := len(obj.SCRAM)
		obj.SCRAM = slices.DeleteFunc(obj.SCRAM, func(o ScramCredential) bool { return o.Mechanism == mechanism })
		found = len(obj.SCRAM) < n
		return found
	})
	if err == nil && !found {
		return fmt.Errorf("%w: user %q, %s", ErrUnknownCredential, name, mechanism)
	}
	return err
}

// updateUser applies fn to the user's object (a fresh one when absent) and
// writes it if fn reports a change, retrying lost CAS races.
func (s *Store) updateUser(ctx context.Context, name string, fn func(*userObject) bool) error {
	key := userKey(name)
	return s.casLoop(ctx, "update user "+name, func() (bool, error) {
		var obj userObject
		etag, err := s.getObject(ctx, key, &obj)
		switch {
		case objstore.IsNotFound(err):
			obj = userObject{Version: objectVersion, Name: name}
		case err != nil:
			return false, fmt.Errorf("read user %q: %w", name, err)
		}
		if !fn(&obj) {
			return true, nil
		}
		opts := objstore.PutOptions{IfMatch: etag, IfAbsent: etag == ""}
		_, err = s.bucket.Put(ctx, key, encodeObject(obj), opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write user %q: %w", name, err)
		}
		return true, nil
	})
}

// UserKeys lists the user objects with their ETags, so a cache re-reads
// only the objects that changed.
func (s *Store) UserKeys(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.bucket.List(ctx, usersPrefix, func(key string, attrs objstore.Attributes) error {
		if strings.HasSuffix(key, jsonSuffix) {
			out[key] = attrs.ETag
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}
