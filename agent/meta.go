package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
