package topics

// Diskless topics (docs/design.md §7a): their partitions have no
// state.json, no replicas and no local log, so the table neither places
// them nor asks the Host to open them; the diskless data path
// (DisklessPartitions) serves them instead.
//
// THE GATE. Until the agent has that data path, Config.Diskless is nil,
// and disklessPath is the one place that reads it: creating a diskless
// topic is refused with INVALID_CONFIG, and one found in the store
// (written by a newer agent) is not served by this one. Wiring the data
// path is setting Config.Diskless in the agent root (agent/topics.go,
// newTopicTable); errNoDiskless and disklessPath then go.

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
)

// DisklessPartitions is the diskless data path as the table sees it. Its
// methods are called with the table's adminMu held, as the Host's are,
// and must not call the table's changing methods.
type DisklessPartitions interface {
	// OpenDiskless returns partitions [first, t.Partitions) of the
	// diskless topic t, in index order, for the Kafka handlers. Every
	// agent serves every partition of a diskless topic.
	OpenDiskless(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32) ([]dataplane.Partition, error)
}

// errNoDiskless is the gate's answer: this agent has no diskless data
// path. It wraps metadata.ErrInvalidConfig, which the handlers answer
// INVALID_CONFIG.
var errNoDiskless = fmt.Errorf("%w: %s=true: this agent does not serve diskless topics yet",
	metadata.ErrInvalidConfig, metadata.DisklessEnable)

// disklessPath is the gate (file comment): the data path, or
// errNoDiskless while there is none.
func (t *Table) disklessPath() (DisklessPartitions, error) {
	if t.cfg.Diskless == nil {
		return nil, errNoDiskless
	}
	return t.cfg.Diskless, nil
}

// checkDiskless refuses a diskless topic about to be created that cannot
// be one: an internal topic, a refused combination of configs
// (metadata.CheckDiskless), or any at all while the gate is shut.
func (t *Table) checkDiskless(name string, configs map[string]string, r metadata.Resolved) error {
	if Internal(name) {
		return fmt.Errorf("%w: %q is internal and cannot be diskless", metadata.ErrInvalidConfig, name)
	}
	if err := metadata.CheckDiskless(configs, r); err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	if _, err := t.disklessPath(); err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	return nil
}
