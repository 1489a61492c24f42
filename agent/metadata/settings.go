package metadata

import (
	"fmt"
	"time"
)

// Settings are the limits of a Store. Every field has a default in
// DefaultSettings; Validate names the first bad field.
type Settings struct {
	// CASRetries bounds every read-modify-write loop (topic updates,
	// producer-id blocks, agent registration) before it gives up with
	// ErrConflict.
	CASRetries int
	// CASBackoffMin and CASBackoffMax bound the jittered exponential pause
	// between CAS attempts; the pause spreads out contending writers so they
	// do not collide again in lock step.
	CASBackoffMin time.Duration
	CASBackoffMax time.Duration
	// MaxPartitions is the largest partition count a topic may have.
	MaxPartitions int32
	// MaxReplicas is the largest replica list one partition may have.
	MaxReplicas int
	// MaxProducerIDBlock is the largest n ReserveProducerIDs accepts.
	MaxProducerIDBlock int64
	// MaxObjectBytes is the largest metadata object this package will decode;
	// anything bigger is treated as corrupt rather than parsed.
	MaxObjectBytes int
	// Concurrency bounds the object requests one call issues in parallel
	// (writing a new topic's state objects, reading every topic, deleting a
	// topic's tree).
	Concurrency int
	// OrphanGrace is how old every object of an unnamed topic tree must be
	// before CleanOrphans deletes it, so a create in progress is left alone.
	OrphanGrace time.Duration
}

// DefaultSettings returns the settings New uses.
func DefaultSettings() Settings {
	return Settings{
		CASRetries:         100,
		CASBackoffMin:      time.Millisecond,
		CASBackoffMax:      50 * time.Millisecond,
		MaxPartitions:      100_000,
		MaxReplicas:        64,
		MaxProducerIDBlock: 1 << 20,
		MaxObjectBytes:     4 << 20,
		Concurrency:        16,
		OrphanGrace:        time.Hour,
	}
}

// Validate reports the first setting out of range.
func (s Settings) Validate() error {
	switch {
	case s.CASRetries < 1:
		return fmt.Errorf("metadata: Settings.CASRetries must be >= 1, got %d", s.CASRetries)
	case s.CASBackoffMin < 0:
		return fmt.Errorf("metadata: Settings.CASBackoffMin must be >= 0, got %v", s.CASBackoffMin)
	case s.CASBackoffMax < s.CASBackoffMin:
		return fmt.Errorf("metadata: Settings.CASBackoffMax (%v) must be >= CASBackoffMin (%v)", s.CASBackoffMax, s.CASBackoffMin)
	case s.MaxPartitions < 1:
		return fmt.Errorf("metadata: Settings.MaxPartitions must be >= 1, got %d", s.MaxPartitions)
	case s.MaxReplicas < 1:
		return fmt.Errorf("metadata: Settings.MaxReplicas must be >= 1, got %d", s.MaxReplicas)
	case s.MaxProducerIDBlock < 1:
		return fmt.Errorf("metadata: Settings.MaxProducerIDBlock must be >= 1, got %d", s.MaxProducerIDBlock)
	case s.MaxObjectBytes < 1024:
		return fmt.Errorf("metadata: Settings.MaxObjectBytes must be >= 1024, got %d", s.MaxObjectBytes)
	case s.Concurrency < 1:
		return fmt.Errorf("metadata: Settings.Concurrency must be >= 1, got %d", s.Concurrency)
	case s.OrphanGrace < 0:
		return fmt.Errorf("metadata: Settings.OrphanGrace must be >= 0, got %v", s.OrphanGrace)
	}
	return nil
}
