package metadata

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/internal/scram"
	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestScramUsers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := context.Background()
		s := New(b, nil)
		alice256 := scram.SHA256.NewCredential("a", []byte("salt"), 4096)
		alice512 := scram.SHA512.NewCredential("a", []byte("salt"), 4096)
		// A name that needs escaping in a key.
		odd := "team/ops=1,x"
		for _, c := range []struct {
			user string
			cred scram.Credential
		}{{"alice", alice256}, {"alice", alice512}, {odd, alice256}} {
			if created, err := s.UpsertScramCredential(ctx, c.user, stored(c.cred), true); err != nil || !created {
				t.Fatalf("create %s %s: %v %v", c.user, c.cred.Mechanism.Name(), created, err)
			}
		}
		// --add-scram again: the existing credential stays.
		other := scram.SHA256.NewCredential("b", []byte("salt"), 4096)
		if created, err := s.UpsertScramCredential(ctx, "alice", stored(other), true); err != nil || created {
			t.Fatalf("bootstrap over an existing credential: created %v, %v", created, err)
		}
		users, err := s.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, u := range users {
			got[u.Name] = len(u.SCRAM)
		}
		if got["alice"] != 2 || got[odd] != 1 || len(got) != 2 {
			t.Fatalf("users %v", got)
		}
		for _, u := range users {
			if u.Name == "alice" && !matches(u.SCRAM[0], "a") {
				t.Fatal("alice's stored credential does not match her password")
			}
		}
		// An upsert replaces.
		if _, err := s.UpsertScramCredential(ctx, "alice", stored(other), false); err != nil {
			t.Fatal(err)
		}
		keys, err := s.UserKeys(ctx)
		if err != nil || len(keys) != 2 {
			t.Fatalf("user keys %v, %v", keys, err)
		}
		u, err := s.ReadUser(ctx, userKey("alice"))
		if err != nil || len(u.SCRAM) != 2 || !matches(u.SCRAM[0], "b") {
			t.Fatalf("alice after the replace: %+v, %v", u, err)
		}
		if err := s.DeleteScramCredential(ctx, "alice", scram.SHA256.Name()); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteScramCredential(ctx, "alice", scram.SHA256.Name()); !errors.Is(err, ErrUnknownCredential) {
			t.Fatalf("second delete: %v", err)
		}
		if err := s.DeleteScramCredential(ctx, "nobody", scram.SHA512.Name()); !errors.Is(err, ErrUnknownCredential) {
			t.Fatalf("delete of an unknown user: %v", err)
		}
		if err := s.DeleteScramCredential(ctx, odd, scram.SHA256.Name()); err != nil {
			t.Fatal(err)
		}
		users, _ = s.Users(ctx)
		if len(users) != 1 || users[0].Name != "alice" || len(users[0].SCRAM) != 1 {
			t.Fatalf("after deletes: %+v", users)
		}
	})
}

// TestScramUpsertsRace: concurrent upserts of one user's two mechanisms
// both land (CAS, not last writer wins).
func TestScramUpsertsRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := context.Background()
		s := New(b, nil)
		var wg sync.WaitGroup
		for _, m := range scram.Mechanisms() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.UpsertScramCredential(ctx, "bob", stored(m.NewCredential("p", []byte("salt"), 4096)), false); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		u, err := s.ReadUser(ctx, userKey("bob"))
		if err != nil || len(u.SCRAM) != 2 {
			t.Fatalf("bob: %+v, %v", u, err)
		}
	})
}

func TestReadUserRejectsCorrupt(t *testing.T) {
	b := objstore.NewMem()
	defer b.Close()
	ctx := context.Background()
	s := New(b, nil)
	// A credential that does not check out is the agent's to find
	// (agent/users.go); the object's name is this package's.
	for name, body := range map[string]string{
		"other name": `{"version":1,"name":"mallory","scram":[]}`,
	} {
		if _, err := b.Put(ctx, userKey("x"), []byte(body), objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadUser(ctx, userKey("x")); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// stored is c as the store keeps it.
func stored(c scram.Credential) ScramCredential {
	return ScramCredential{Mechanism: c.Mechanism.Name(), Iterations: c.Iterations, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// matches reports whether the stored credential is password's.
func matches(sc ScramCredential, password string) bool {
	m, err := scram.ByName(sc.Mechanism)
	if err != nil {
		return false
	}
	return scram.Credential{Mechanism: m, Iterations: sc.Iterations, Salt: sc.Salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}.Matches(password)
}
