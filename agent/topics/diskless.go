package topics

// Diskless topics (docs/design.md §7a): their partitions have no
// state.json, no replicas and no local log, so the table neither places
// them nor asks the Host to open them; the diskless data path
// (DisklessPartitions, agent/diskless) serves them instead.

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

// checkDiskless refuses a diskless topic about to be created that cannot
// be one: an internal topic, a refused combination of configs
// (metadata.CheckDiskless).
func (t *Table) checkDiskless(name string, configs map[string]string, r metadata.Resolved) error {
	if Internal(name) {
		return fmt.Errorf("%w: %q is internal and cannot be diskless", metadata.ErrInvalidConfig, name)
	}
	if err := metadata.CheckDiskless(configs, r); err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	return nil
}
