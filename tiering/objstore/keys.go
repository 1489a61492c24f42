package objstore

import "strings"

// MaxKeyBytes is the longest key any backend accepts. It is S3's limit, so a
// layout that works on fs or mem also fits in S3.
const MaxKeyBytes = 1024

// ReservedPrefix starts every name a backend keeps for itself next to the
// objects (the fs backend's temporary files and lock directory). No key
// element may start with it, so such names can never be mistaken for
// objects by List or Get.
const ReservedPrefix = ".strata-"

// ValidateKey reports whether key is usable on every backend. A key is a
// slash-separated relative path: not empty, at most MaxKeyBytes long, no
// leading or trailing slash, no empty, "." or ".." element, no backslash
// (a path separator on Windows) or NUL byte, and no element starting with
// ReservedPrefix. Every backend calls it, including S3, where most of these
// keys would be legal: keeping one rule set means a key never works on one
// backend and fails on another.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return &KeyError{Key: key, Reason: "empty"}
	case len(key) > MaxKeyBytes:
		return &KeyError{Key: key, Reason: "longer than 1024 bytes"}
	case strings.HasPrefix(key, "/"):
		return &KeyError{Key: key, Reason: "absolute (leading slash)"}
	case strings.HasSuffix(key, "/"):
		return &KeyError{Key: key, Reason: "trailing slash"}
	case strings.ContainsRune(key, '\\'):
		return &KeyError{Key: key, Reason: "contains a backslash"}
	case strings.ContainsRune(key, 0):
		return &KeyError{Key: key, Reason: "contains a NUL byte"}
	}
	for elem := range strings.SplitSeq(key, "/") {
		switch {
		case elem == "":
			return &KeyError{Key: key, Reason: "empty path element"}
		case elem == "." || elem == "..":
			return &KeyError{Key: key, Reason: "contains a \".\" or \"..\" element"}
		case strings.HasPrefix(elem, ReservedPrefix):
			return &KeyError{Key: key, Reason: "element starts with the reserved prefix " + ReservedPrefix}
		}
	}
	return nil
}
