package diskless

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/internal/bytesize"
)

// Config holds the writer's --diskless-* settings (docs/design.md §7a,
// "Flags and metrics") and the agent id it writes into its objects.
type Config struct {
	// Agent is this agent's id, written into each object's header as its
	// writer. It must be resolved (0 or more) before the writer starts.
	Agent int32
	// CommitInterval (--diskless-commit-interval) is the age of the
	// oldest buffered batch at which the buffer is cut into an object.
	CommitInterval time.Duration
	// CommitBytes (--diskless-commit-bytes) is the buffered size at which
	// it is cut. A batch larger than this is cut alone.
	CommitBytes int64
	// BufferMaxBytes (--diskless-buffer-max-bytes) bounds the bytes of
	// batches taken and not yet answered: buffered, uploading and
	// committing. Past it Add waits for room.
	BufferMaxBytes int64
	// UploadsInFlight (--diskless-uploads-in-flight) is how many object
	// PUTs run at once.
	UploadsInFlight int
	// CommitTimeout (--diskless-commit-timeout) is how long after its cut
	// an object's upload and commit are tried; then its batches fail.
	CommitTimeout time.Duration
}

// Bounds beyond which a setting is a mistake rather than a choice.
const (
	maxCommitBytes     = 1 << 30 // an object is held in memory twice while it is encoded
	maxUploadsInFlight = 256
)

// DefaultConfig is the design's defaults, for agent 0.
func DefaultConfig() Config {
	return Config{
		CommitInterval:  250 * time.Millisecond,
		CommitBytes:     8 << 20,
		BufferMaxBytes:  64 << 20,
		UploadsInFlight: 4,
		CommitTimeout:   30 * time.Second,
	}
}

// RegisterFlags adds the writer's flags to fs, with c's values as the
// defaults. The agent id is --agent-id's, set by the agent.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&c.CommitInterval, "diskless-commit-interval", c.CommitInterval, "Age of the oldest batch in the diskless write buffer at which the buffer is cut into one object, uploaded and committed; a longer interval means fewer PUTs and slower produce answers.")
	fs.Var(bytesize.NewFlag(&c.CommitBytes), "diskless-commit-bytes", "Size, as bytes or with a unit (8MiB), at which the diskless write buffer is cut into an object before its interval passes; a larger batch is cut alone.")
	fs.Var(bytesize.NewFlag(&c.BufferMaxBytes), "diskless-buffer-max-bytes", "Most bytes of diskless batches an agent holds before they are answered (buffered, uploading and committing); past it a Produce waits, within its timeout, for room.")
	fs.IntVar(&c.UploadsInFlight, "diskless-uploads-in-flight", c.UploadsInFlight, "Most diskless commit objects uploading to the store at once.")
	fs.DurationVar(&c.CommitTimeout, "diskless-commit-timeout", c.CommitTimeout, "How long after its cut a diskless object's upload and commit are tried before its batches fail; coordinators refuse commits of older objects, and --orphan-grace must be at least twice this.")
}

// Validate names the first bad setting by its flag.
func (c Config) Validate() error {
	switch {
	case c.Agent < 0:
		return fmt.Errorf("diskless writer: agent id %d: must be resolved (0 or more) before the writer starts", c.Agent)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("--diskless-commit-timeout %v: must be positive", c.CommitTimeout)
	case c.CommitInterval <= 0 || c.CommitInterval >= c.CommitTimeout:
		return fmt.Errorf("--diskless-commit-interval %v: must be positive and below --diskless-commit-timeout (%v)", c.CommitInterval, c.CommitTimeout)
	case c.CommitBytes <= 0 || c.CommitBytes > maxCommitBytes:
		return fmt.Errorf("--diskless-commit-bytes %d: must be in [1, %d]", c.CommitBytes, maxCommitBytes)
	case c.BufferMaxBytes < c.CommitBytes:
		return fmt.Errorf("--diskless-buffer-max-bytes %d: must be at least --diskless-commit-bytes (%d)", c.BufferMaxBytes, c.CommitBytes)
	case c.UploadsInFlight < 1 || c.UploadsInFlight > maxUploadsInFlight:
		return fmt.Errorf("--diskless-uploads-in-flight %d: must be in [1, %d]", c.UploadsInFlight, maxUploadsInFlight)
	}
	return nil
}
