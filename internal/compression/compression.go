// Package compression maps the codec names Kafka's tools take (none, gzip,
// snappy, lz4, zstd) to franz-go codecs, for the client commands and the
// load generator alike.
package compression

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Names lists the accepted names.
const Names = "none, gzip, snappy, lz4 or zstd"

// Parse returns the codec of name (case-insensitive; empty means none);
// ok is false for an unknown name.
func Parse(name string) (kgo.CompressionCodec, bool) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), true
	case "gzip":
		return kgo.GzipCompression(), true
	case "snappy":
		return kgo.SnappyCompression(), true
	case "lz4":
		return kgo.Lz4Compression(), true
	case "zstd":
		return kgo.ZstdCompression(), true
	}
	return kgo.CompressionCodec{}, false
}
