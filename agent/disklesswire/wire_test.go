package disklesswire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleMessages() []kmsg.Request {
	return []kmsg.Request{
		&CommitRequest{ObjectID: [16]byte{1, 2}, CutMs: 1700, Writer: 3, Batches: []CommitBatch{
			{TopicID: [16]byte{9}, Partition: 4, Position: 10, Size: 70, LastOffsetDelta: 2, MaxTimestamp: 5,
				ProducerID: 8, ProducerEpoch: 1, BaseSequence: 6, Attributes: 16},
			{TopicID: [16]byte{7}, Partition: 0, Position: 80, Size: 61, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			{TopicID: [16]byte{7}, Partition: 1, ProducerID: 3, Attributes: 48, Inline: []byte{9, 9}},
		}},
		&IndexRequest{MaxWaitMs: 500, Partitions: []IndexPartition{{TopicID: [16]byte{3}, Partition: 1, Op: OpAborted, Value: 99, MaxBytes: 1 << 20, Upper: 120}}},
		&GuardRequest{TopicID: [16]byte{4}, Partition: 2, ProducerID: 77, ProducerEpoch: 3},
		&ObjectsRequest{IDs: [][16]byte{{1}, {2, 3}}},
		&TrimRequest{TopicID: [16]byte{8}, Partition: 3, Offset: 99},
	}
}

func sampleResponses() []kmsg.Response {
	msg := "out of order"
	return []kmsg.Response{
		&CommitResponse{Results: []CommitResult{{BaseOffset: 7, LogStart: 1, Duplicate: true}, {ErrorCode: 45, ErrorMessage: &msg, BaseOffset: -1}}},
		&IndexResponse{Partitions: []IndexAnswer{{LogStart: 1, CompactedEnd: 2, HighWatermark: 10, LastStable: 9, CoordEpoch: 4, Epoch: -1, EndOffset: -1,
			Batches: []Located{{BaseOffset: 2, LastOffset: 5, ObjectID: [16]byte{5}, Position: 3, Size: 100, MaxTimestamp: 8, Epoch: 4},
				{BaseOffset: 6, LastOffset: 6, Epoch: 4, Inline: []byte{1, 2, 3}}},
			Aborted: []Aborted{{ProducerID: 5, FirstOffset: 2, LastOffset: 6}}}}},
		&GuardResponse{ErrorCode: 6},
		&ObjectsResponse{Referenced: []bool{true, false, true}},
		&TrimResponse{ErrorCode: 1, LogStart: 42},
	}
}

type message interface {
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

// TestRoundTrip encodes each message, decodes it into a fresh one, and
// expects the same bytes again; every truncation and a trailing byte
// are refused.
func TestRoundTrip(t *testing.T) {
	var all []message
	for _, r := range sampleMessages() {
		all = append(all, r)
	}
	for _, r := range sampleResponses() {
		all = append(all, r)
	}
	for _, m := range all {
		b := m.AppendTo(nil)
		fresh := freshOf(m)
		if err := fresh.ReadFrom(b); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if again := fresh.AppendTo(nil); !bytes.Equal(again, b) {
			t.Fatalf("%T: re-encoded differs:\n%x\n%x", m, b, again)
		}
		for n := range len(b) {
			if err := freshOf(m).ReadFrom(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%T cut at %d of %d: %v", m, n, len(b), err)
			}
		}
		if err := freshOf(m).ReadFrom(append(b, 0)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%T with a trailing byte: %v", m, err)
		}
	}
}

func freshOf(m message) message {
	switch m.(type) {
	case *CommitRequest:
		return &CommitRequest{}
	case *CommitResponse:
		return &CommitResponse{}
	case *IndexRequest:
		return &IndexRequest{}
	case *IndexResponse:
		return &IndexResponse{}
	case *GuardRequest:
		return &GuardRequest{}
	case *GuardResponse:
		return &GuardResponse{}
	case *ObjectsRequest:
		return &ObjectsRequest{}
	case *ObjectsResponse:
		return &ObjectsResponse{}
	case *TrimRequest:
		return &TrimRequest{}
	case *TrimResponse:
		return &TrimResponse{}
	}
	panic("unknown message")
}

// TestHugeArrayRefused: a length beyond the frame is refused before
// anything is allocated for it.
func TestHugeArrayRefused(t *testing.T) {
	b := (&IndexRequest{MaxWaitMs: 1}).AppendTo(nil)
	b[4], b[5], b[6], b[7] = 0x7f, 0xff, 0xff, 0xff
	if err := (&IndexRequest{}).ReadFrom(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

// FuzzDecode: no frame panics a decoder, and what one accepts encodes
// to bytes that decode to the same message (a nullable string's length
// below -1 reads as null, so the bytes themselves may differ).
func FuzzDecode(f *testing.F) {
	for _, r := range sampleMessages() {
		f.Add(uint8(r.Key()-KeyCommit)*2, r.AppendTo(nil))
	}
	for _, r := range sampleResponses() {
		f.Add(uint8(r.Key()-KeyCommit)*2+1, r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		var m message
		switch kind % 10 {
		case 0:
			m = &CommitRequest{}
		case 1:
			m = &CommitResponse{}
		case 2:
			m = &IndexRequest{}
		case 3:
			m = &IndexResponse{}
		case 4:
			m = &GuardRequest{}
		case 5:
			m = &GuardResponse{}
		case 6:
			m = &ObjectsRequest{}
		case 7:
			m = &ObjectsResponse{}
		case 8:
			m = &TrimRequest{}
		default:
			m = &TrimResponse{}
		}
		if m.ReadFrom(b) != nil {
			return
		}
		once := m.AppendTo(nil)
		if err := m.ReadFrom(once); err != nil {
			t.Fatalf("%T accepted %x, encoded it as %x and refused that: %v", m, b, once, err)
		}
		if twice := m.AppendTo(nil); !bytes.Equal(once, twice) {
			t.Fatalf("%T: %x re-encodes as %x", m, once, twice)
		}
	})
}
