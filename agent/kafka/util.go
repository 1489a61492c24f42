package kafka

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"

	"github.com/strata-streaming/strata/agent/group"
)

func strptr(s string) *string { return &s }

func errf(format string, args ...any) error { return errors.New(fmt.Sprintf(format, args...)) }

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// clientHost is the client's address as Kafka reports it: "/ip".
func clientHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return "/" + host
}

// nonNil returns b, or an empty slice for nil: a non-nullable bytes field
// must not be sent as null.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// hasPartition reports whether t (nil for an unknown topic) has partition p.
func hasPartition(t *Topic, p int32) bool {
	return t != nil && p >= 0 && p < t.PartitionCount
}

// sortedIDs returns the topic ids of an assignment in byte order, so
// responses list topics in a stable order.
func sortedIDs(a group.Assignment) [][16]byte {
	return slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
}
