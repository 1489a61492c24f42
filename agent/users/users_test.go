package users

import (
	"errors"
	"testing"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/scram"
)

// TestStoredCredentialsAreChecked: a credential read from the store goes
// back to what was stored, and one of an unknown mechanism or with keys
// of the wrong length makes its object corrupt, so the cache keeps what
// it had for that user.
func TestStoredCredentialsAreChecked(t *testing.T) {
	c := scram.SHA256.NewCredential("pw", []byte("salt"), 4096)
	got, err := Credentials("users/a.json", metadata.User{Name: "a", SCRAM: []metadata.ScramCredential{Stored(c)}})
	if err != nil || len(got) != 1 || !got[0].Matches("pw") {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for name, sc := range map[string]metadata.ScramCredential{
		"bad mech":  {Mechanism: "SCRAM-SHA-1", Iterations: 4096, Salt: []byte("salt")},
		"short key": {Mechanism: "SCRAM-SHA-256", Iterations: 4096, Salt: []byte("salt"), StoredKey: []byte{0}, ServerKey: []byte{0}},
	} {
		if _, err := Credentials("users/x.json", metadata.User{Name: "x", SCRAM: []metadata.ScramCredential{sc}}); !errors.Is(err, metadata.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}
