package membership

// Gossip encryption (--gossip-key-file). With a key file every gossip
// message, UDP and TCP alike (joins, push/pulls, leave intents), is sealed
// with AES-GCM under the file's first key, and a message no key of the file
// opens is dropped: a host without the key can neither join nor be heard.
// The file may list more keys, each accepted on the way in, which is how a
// key is rotated without downtime (docs/security.md): add the new key
// second on every agent, then move it first everywhere, then drop the old.
// The file is re-read while the agent runs, because Kubernetes updates a
// mounted Secret in place and a restart per rotation step would be the
// downtime rotation exists to avoid.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"

	"github.com/strata-streaming/strata/internal/secretfile"
)

// readKeyFile returns the keys of a gossip key file, the primary first.
func readKeyFile(path string) ([][]byte, error) {
	lines, err := secretfile.Read(path)
	if err != nil {
		return nil, err
	}
	return parseKeys(lines)
}

// parseKeys decodes one base64 key per line, each 16, 24 or 32 bytes
// (AES-128, -192 or -256).
func parseKeys(lines []secretfile.Line) ([][]byte, error) {
	var keys [][]byte
	for _, line := range lines {
		key, err := base64.StdEncoding.DecodeString(line.Text)
		if err != nil {
			return nil, fmt.Errorf("line %d: not base64 (make a key with: head -c 32 /dev/urandom | base64)", line.Number)
		}
		if err := memberlist.ValidateKey(key); err != nil {
			return nil, fmt.Errorf("line %d: a key of %d bytes; want 16, 24 or 32", line.Number, len(key))
		}
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return nil, fmt.Errorf("line %d: the same key twice", line.Number)
			}
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in it")
	}
	return keys, nil
}

// keyWatcher loads the key file into m.ring, creating it on the first
// load, and keeps it in step with the file.
func (m *Membership) keyWatcher() *secretfile.Watcher {
	return &secretfile.Watcher{Path: m.cfg.KeyFile, Interval: m.cfg.KeyReloadInterval, What: "gossip keys", Logger: m.logger,
		Apply: func(lines []secretfile.Line) error {
			keys, err := parseKeys(lines)
			if err != nil {
				return err
			}
			if m.ring == nil {
				m.ring, err = memberlist.NewKeyring(keys, keys[0])
				return err
			}
			return installKeys(m.ring, keys)
		}}
}

// installKeys makes ring hold exactly keys, keys[0] its primary. The order
// matters to the agents still on the old keys: a key is added before it is
// used, and the old primary is dropped only once the new one encrypts.
func installKeys(ring *memberlist.Keyring, keys [][]byte) error {
	for _, k := range keys {
		if err := ring.AddKey(k); err != nil {
			return err
		}
	}
	if err := ring.UseKey(keys[0]); err != nil {
		return err
	}
	// GetKeys shares the ring's slice, which RemoveKey rewrites: copy it.
	old := append([][]byte(nil), ring.GetKeys()...)
	for _, k := range old {
		if !containsKey(keys, k) {
			if err := ring.RemoveKey(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func containsKey(keys [][]byte, key []byte) bool {
	for _, k := range keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}
