package kafka

// The per-request topic limit (--max-topics-per-request, Strata's own;
// Kafka has none). A request decoded costs more than its frame: about 100
// bytes per topic named in CreateTopics or Metadata for the decoded
// request and as much again for its answer, against 20 to 30 bytes on the
// wire, so a 100 MiB frame of 4.7 million short names once made an answer
// of 770 MB and a peak RSS of 4.85 GB. The requests whose body opens with
// their list of topics (Metadata, CreateTopics, DeleteTopics,
// CreatePartitions) have that list's length read from the frame before
// anything is decoded; past the limit the connection is closed, as for a
// frame over socket.request.max.bytes, and the reason is logged. The
// default (a million) is far above what any real client names in one
// request: Kafka's clusters hold a few hundred thousand partitions.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// DefaultMaxTopicsPerRequest is --max-topics-per-request.
const DefaultMaxTopicsPerRequest = 1_000_000

// errTooManyTopics closes a connection whose request names more topics
// than Config.MaxTopicsPerRequest.
var errTooManyTopics = errors.New("kafka: request names too many topics")

// checkTopicCount returns errTooManyTopics when body, the body of a
// request of key (flexible or not), opens with a list of more than max
// topics. Other requests, and bodies too short to tell, pass: decoding
// finds those.
func checkTopicCount(key int16, flexible bool, body []byte, max int) error {
	switch key {
	case 3, 19, 20, 37: // Metadata, CreateTopics, DeleteTopics, CreatePartitions
	default:
		return nil
	}
	r := kbin.Reader{Src: body}
	var n int
	if flexible {
		n = int(r.Uvarint()) - 1
	} else {
		n = int(r.Int32())
	}
	if r.Ok() && n > max {
		return fmt.Errorf("%w: api key %d names %d; the limit (--max-topics-per-request) is %d", errTooManyTopics, key, n, max)
	}
	return nil
}
