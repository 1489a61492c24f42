package objstore

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidKey is returned (wrapped in a *KeyError) for a key that breaks
	// the rules in ValidateKey. Every backend checks keys the same way, so a
	// key that works on mem also works on fs and S3.
	ErrInvalidKey = errors.New("objstore: invalid key")
	// ErrCorrupt is returned (wrapped in a *CorruptObjectError) when a stored
	// object fails its own checks on read: a bad header, a wrong length or a
	// checksum mismatch. It means the medium lost or changed bytes.
	ErrCorrupt = errors.New("objstore: corrupt object")
	// ErrClosed is returned by every method of a bucket after Close.
	ErrClosed = errors.New("objstore: bucket closed")
	// ErrUnsupportedScheme is returned (wrapped) by Open for a store URL whose
	// scheme this build cannot serve.
	ErrUnsupportedScheme = errors.New("objstore: unsupported store scheme")
)

// KeyError names a rejected key and why it was rejected.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("objstore: invalid key %q: %s", e.Key, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidKey) true.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// CorruptObjectError locates a corrupt object: the key, the file or
// location it was read from (backend specific, may be empty) and what was
// wrong with it.
type CorruptObjectError struct {
	Key      string
	Location string
	Reason   string
}

func (e *CorruptObjectError) Error() string {
	if e.Location == "" {
		return fmt.Sprintf("objstore: corrupt object %q: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("objstore: corrupt object %q (%s): %s", e.Key, e.Location, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptObjectError) Unwrap() error { return ErrCorrupt }

// IsCorrupt reports whether err means a stored object failed its checks.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
