package membership

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T, fill byte) string {
	t.Helper()
	k := make([]byte, 32)
	for i := range k {
		k[i] = fill + byte(i)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// writeKeys replaces the key file at path, as a Secret update does: a new
// file renamed over the old one, so a reader never sees half of it.
func writeKeys(t *testing.T, path string, keys ...string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("# gossip keys, the first encrypts\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) keyed(path string, seeds ...string) Config {
	cfg := c.config(seeds...)
	cfg.KeyFile = path
	cfg.KeyReloadInterval = 50 * time.Millisecond
	return cfg
}

// sees reports whether m's view holds the agent with id.
func sees(m *member, id int32) bool {
	for _, x := range m.Members() {
		if x.ID == id {
			return true
		}
	}
	return false
}

// TestGossipKeyKeepsStrangersOut: members with the key form a cluster; a
// member without a key, and one with another key, try to join through the
// same seed and are never let in, nor do they see anyone.
func TestGossipKeyKeepsStrangersOut(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	writeKeys(t, good, newKey(t, 1))
	writeKeys(t, bad, newKey(t, 2))

	a := c.startWith(c.keyed(good), 0)
	seed := a.Self().GossipAddr
	b := c.startWith(c.keyed(good, seed), 1)
	plain := c.startWith(c.config(seed), 2)
	wrong := c.startWith(c.keyed(bad, seed), 3)

	waitFor(t, "the keyed members see each other", func() bool { return sees(a, 1) && sees(b, 0) })
	waitFor(t, "three failed joins by each stranger", func() bool {
		return plain.joinFailures.Load() >= 3 && wrong.joinFailures.Load() >= 3
	})
	for _, m := range []*member{a, b} {
		if sees(m, 2) || sees(m, 3) {
			t.Fatalf("agent %d let a stranger in: %+v", m.Self().ID, m.Members())
		}
	}
	for _, m := range []*member{plain, wrong} {
		if n := len(m.Members()); n != 1 {
			t.Fatalf("stranger %d sees %d members, want itself only", m.Self().ID, n)
		}
	}
}

// TestGossipKeyRotation rotates the cluster's key in the three documented
// steps, with the file rewritten under running members: nobody is ever
// declared failed, and a member that starts with only the new key joins
// at the end while one with only the old key no longer can.
func TestGossipKeyRotation(t *testing.T) {
	c := newCluster(t)
	dir := t.TempDir()
	oldKey, newKeyB64 := newKey(t, 1), newKey(t, 100)
	paths := []string{filepath.Join(dir, "k0"), filepath.Join(dir, "k1"), filepath.Join(dir, "k2")}
	for _, p := range paths {
		writeKeys(t, p, oldKey)
	}
	a := c.startWith(c.keyed(paths[0]), 0)
	seed := a.Self().GossipAddr
	ms := []*member{a, c.startWith(c.keyed(paths[1], seed), 1), c.startWith(c.keyed(paths[2], seed), 2)}
	waitFor(t, "three members", func() bool { return len(a.Members()) == 3 })

	// Each step lands on the members one at a time, with gossip running in
	// between: the states a rolling update of a Secret goes through.
	steps := [][]string{{oldKey, newKeyB64}, {newKeyB64, oldKey}, {newKeyB64}}
	for i, keys := range steps {
		for _, p := range paths {
			writeKeys(t, p, keys...)
			time.Sleep(300 * time.Millisecond)
		}
		primary, _ := base64.StdEncoding.DecodeString(keys[0])
		for _, m := range ms {
			waitFor(t, "keys installed", func() bool {
				got := m.ring.GetKeys()
				return len(got) == len(keys) && string(got[0]) == string(primary)
			})
		}
		t.Logf("step %d installed on all", i+1)
	}
	time.Sleep(time.Second) // a few probe rounds under the new key alone
	for _, m := range ms {
		if n := m.countEvents(func(e Event) bool { return e.Type == EventFail }); n > 0 {
			t.Fatalf("agent %d saw %d failures during the rotation", m.Self().ID, n)
		}
		if n := len(m.Members()); n != 3 {
			t.Fatalf("agent %d sees %d members after the rotation, want 3", m.Self().ID, n)
		}
	}

	fresh, stale := filepath.Join(dir, "fresh"), filepath.Join(dir, "stale")
	writeKeys(t, fresh, newKeyB64)
	writeKeys(t, stale, oldKey)
	d := c.startWith(c.keyed(fresh, seed), 3)
	e := c.startWith(c.keyed(stale, seed), 4)
	waitFor(t, "a member with the new key joins", func() bool { return sees(a, 3) && sees(d, 0) })
	waitFor(t, "three failed joins with the old key", func() bool { return e.joinFailures.Load() >= 3 })
	if sees(a, 4) {
		t.Fatal("a member with the retired key was let in")
	}
}

// TestGossipKeyFileRefused: a bad file stops the start with a message that
// names the flag and the line, and a bad rewrite while running keeps the
// keys in use.
func TestGossipKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"empty":     "# no keys\n",
		"notbase64": "not a key!\n",
		"short":     base64.StdEncoding.EncodeToString([]byte("too short")) + "\n",
		"twice":     newKey(t, 1) + "\n" + newKey(t, 1) + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := LoopbackConfig()
		cfg.KeyFile = p
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "--gossip-key-file") {
			t.Errorf("%s: %v, want an error naming --gossip-key-file", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	missing := LoopbackConfig()
	missing.KeyFile = filepath.Join(dir, "missing")
	if err := missing.Validate(); err == nil {
		t.Error("a missing key file was accepted")
	}

	c := newCluster(t)
	p := filepath.Join(dir, "live")
	writeKeys(t, p, newKey(t, 7))
	m := c.startWith(c.keyed(p), 0)
	if err := os.WriteFile(p, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rejection logged", func() bool { return strings.Contains(c.logs.String(), "gossip keys file rejected") })
	if got := m.ring.GetKeys(); len(got) != 1 {
		t.Fatalf("%d keys after a bad rewrite, want the 1 in use", len(got))
	}
}
