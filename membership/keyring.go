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
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// keyFileMaxBytes bounds a key file read: a few hundred keys, far more than
// a rotation ever needs.
const keyFileMaxBytes = 64 << 10

// readKeyFile returns the keys of a gossip key file, the primary first. The
// file holds one base64 key per line (16, 24 or 32 bytes once decoded:
// AES-128, -192 or -256); blank lines and lines starting with # are skipped.
func readKeyFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, keyFileMaxBytes+1)); err != nil {
		return nil, err
	}
	if buf.Len() > keyFileMaxBytes {
		return nil, fmt.Errorf("longer than %d bytes", keyFileMaxBytes)
	}
	return parseKeys(buf.String())
}

func parseKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: not base64 (make a key with: head -c 32 /dev/urandom | base64)", i+1)
		}
		if err := memberlist.ValidateKey(key); err != nil {
			return nil, fmt.Errorf("line %d: a key of %d bytes; want 16, 24 or 32", i+1, len(key))
		}
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return nil, fmt.Errorf("line %d: the same key twice", i+1)
			}
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in it")
	}
	return keys, nil
}

// keyID names a key in logs without revealing it: the first 4 bytes of its
// SHA-256, in hex.
func keyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
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

// keyFileStamp is what tells that a key file may have changed: a
// Kubernetes Secret update swaps a symlink, which changes the modification
// time and usually the size of what the path names.
type keyFileStamp struct {
	mod  time.Time
	size int64
}

func stampKeyFile(path string) (keyFileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return keyFileStamp{}, err
	}
	return keyFileStamp{fi.ModTime(), fi.Size()}, nil
}

// openKeyring reads the key file into a keyring, with the stamp it was read
// at. The stamp is taken first, so a change made while reading is seen by
// the next check.
func openKeyring(path string) (*memberlist.Keyring, keyFileStamp, error) {
	stamp, err := stampKeyFile(path)
	if err != nil {
		return nil, keyFileStamp{}, err
	}
	keys, err := readKeyFile(path)
	if err != nil {
		return nil, keyFileStamp{}, err
	}
	ring, err := memberlist.NewKeyring(keys, keys[0])
	return ring, stamp, err
}

// watchKeyFile re-reads the key file every KeyReloadInterval while its
// stamp changes, and installs what it reads. A file that cannot be read or
// parsed leaves the keys as they were, with a warning: an agent that lost
// its keys would drop out of the cluster.
func (m *Membership) watchKeyFile(ring *memberlist.Keyring, stamp keyFileStamp) {
	path := m.cfg.KeyFile
	t := time.NewTicker(m.cfg.KeyReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		now, err := stampKeyFile(path)
		if err != nil {
			m.logger.Warn("gossip key file unreadable; keeping the keys in use", "file", path, "err", err)
			continue
		}
		if now == stamp {
			continue
		}
		keys, err := readKeyFile(path)
		if err != nil {
			m.logger.Warn("gossip key file rejected; keeping the keys in use", "file", path, "err", err)
			continue
		}
		stamp = now
		if err := installKeys(ring, keys); err != nil {
			m.logger.Error("gossip keys not installed", "file", path, "err", err)
			continue
		}
		m.logger.Info("gossip keys reloaded", "file", path, "keys", len(keys), "primary", keyID(keys[0]))
	}
}
