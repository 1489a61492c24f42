package partition

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/vfs"
)

// DirName is the directory of a partition under <data-dir>/log.
func DirName(topic string, index int32) string {
	return fmt.Sprintf("%s-%d", topic, index)
}

// MetaFile records which topic id a partition directory belongs to, so
// that a directory left by a deleted topic is never mistaken for a
// re-created topic of the same name.
const MetaFile = "partition.metadata"

// maxMetaFileBytes bounds what is read of partition.metadata: it is a few
// dozen bytes, and a huge one is damage, not data.
const maxMetaFileBytes = 64 << 10

type dirMeta struct {
	Version int    `json:"version"`
	TopicID string `json:"topic_id"`
}

// WriteMeta creates dir and records in it that it belongs to topic id.
func WriteMeta(fs vfs.FS, dir string, id [16]byte) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(dirMeta{Version: 1, TopicID: metadata.FormatTopicID(id)})
	return vfs.WriteFileAtomic(fs, dir, filepath.Join(dir, MetaFile), append(b, '\n'))
}

// ReadTopicID returns the topic id recorded in dir; ok is false when the
// file is missing or unreadable.
func ReadTopicID(fs vfs.FS, dir string) (id [16]byte, ok bool) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, MetaFile), maxMetaFileBytes)
	if err != nil {
		return id, false
	}
	var m dirMeta
	if json.Unmarshal(b, &m) != nil {
		return id, false
	}
	id, err = metadata.ParseTopicID(m.TopicID)
	return id, err == nil
}
