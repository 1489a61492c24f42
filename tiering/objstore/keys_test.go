package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"cluster.json", true},
		{"topics/abc/0/segments/00000000000000000000-0-uuid.log", true},
		{"a/.hidden", true},
		{"a/..b", true},
		{strings.Repeat("k", objstore.MaxKeyBytes), true},
		{"", false},
		{"/abs", false},
		{"trailing/", false},
		{"a//b", false},
		{".", false},
		{"a/./b", false},
		{"../up", false},
		{`a\b`, false},
		{"nul\x00", false},
		{".strata-tmp-1", false},
		{"a/.strata-locks/x", false},
		{strings.Repeat("k", objstore.MaxKeyBytes+1), false},
	} {
		err := objstore.ValidateKey(tc.key)
		if tc.ok != (err == nil) {
			t.Errorf("ValidateKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
		}
		var ke *objstore.KeyError
		if err != nil && (!errors.Is(err, objstore.ErrInvalidKey) || !errors.As(err, &ke) || ke.Key != tc.key) {
			t.Errorf("ValidateKey(%q) = %v, want a *KeyError wrapping ErrInvalidKey", tc.key, err)
		}
	}
}
