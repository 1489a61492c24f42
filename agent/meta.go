package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/internal/vfs"
)

// metaFile is <data-dir>/meta.json: which agent and cluster the data
// directory belongs to, so that a directory is never reused by another
// agent id or attached to another cluster's store by mistake.
const metaFile = "meta.json"

// metaVersion is the format of meta.json (and of the data directory).
const metaVersion = 1

// maxStateFileBytes bounds what is read of meta.json and partition.metadata:
// both are a few dozen bytes, and a huge one is damage, not data.
const maxStateFileBytes = 64 << 10

type meta struct {
	Version   int    `json:"version"`
	AgentID   int32  `json:"agent_id"`
	ClusterID string `json:"cluster_id"`
}

// readMeta returns the data directory's meta.json; ok is false when there
// is none (a fresh directory).
func readMeta(fs vfs.FS, dataDir string) (m meta, ok bool, err error) {
	path := filepath.Join(dataDir, metaFile)
	b, err := vfs.ReadFile(fs, path, maxStateFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return meta{}, false, nil
	}
	if err != nil {
		return meta{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, false, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	if m.Version < 1 || m.Version > metaVersion {
		return meta{}, false, fmt.Errorf("%s has version %d; this agent reads version %d", path, m.Version, metaVersion)
	}
	if m.AgentID < 0 || m.ClusterID == "" {
		return meta{}, false, fmt.Errorf("%s names no agent id or cluster id", path)
	}
	return m, true, nil
}

// writeMeta replaces meta.json atomically: temp file, fsync, rename, fsync
// of the directory.
func writeMeta(fs vfs.FS, dataDir string, m meta) error {
	m.Version = metaVersion
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fs, dataDir, filepath.Join(dataDir, metaFile), append(b, '\n'))
}

// hostOrdinal is the agent id --agent-id-from-hostname takes from host, a
// StatefulSet pod's name <statefulset>-<ordinal> (strata-3 is 3); of a
// dotted name, the first label counts.
func hostOrdinal(host string) (int32, error) {
	name, _, _ := strings.Cut(host, ".")
	i := strings.LastIndexByte(name, '-')
	digits := name[i+1:]
	n, err := strconv.ParseInt(digits, 10, 32)
	if i < 0 || err != nil || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("--agent-id-from-hostname: host name %q does not end in -<ordinal>, as a StatefulSet pod's (strata-3) does", host)
	}
	return int32(n), nil
}

// idFlag names where --agent-id's value came from, for errors.
func (c Config) idFlag() string {
	if c.AgentIDFromHostname {
		return "--agent-id-from-hostname"
	}
	return "--agent-id"
}
