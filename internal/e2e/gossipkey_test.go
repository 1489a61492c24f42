package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestGossipKeyRequired: two agents started with --gossip-key-file form a
// cluster; a third agent of the same store, joining them without the key,
// stays alone, and the two never list it, however long it tries.
func TestGossipKeyRequired(t *testing.T) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := "file://" + t.TempDir()
	c := startProcCluster(t, 2, store, nil, "--gossip-key-file", keyFile)

	args := append(slices.Clone(clusterArgs), "--store", store, "--agent-id", "2", "--join-retry-max", "1s",
		"--join", strings.Join([]string{c.agents[0].GossipAddr(), c.agents[1].GossipAddr()}, ","))
	stranger := testagent.Start(t, testagent.Options{ExtraArgs: args})
	strangerKgo := newKgo(t, stranger.Addr())
	c.direct = append(c.direct, strangerKgo)

	// The stranger retries its join every second: 4 s is four tries, and
	// gossip spreads a member through two agents in well under a second.
	time.Sleep(4 * time.Second)
	for i := range 3 {
		m, err := c.metadata(i, "")
		if err != nil {
			t.Fatalf("agent %d: %v", i, err)
		}
		want := 2
		if i == 2 {
			want = 1
		}
		if len(m.Brokers) != want {
			var ids []string
			for _, b := range m.Brokers {
				ids = append(ids, fmt.Sprint(b.NodeID))
			}
			t.Errorf("agent %d lists brokers %v, want %d", i, ids, want)
		}
	}
}
