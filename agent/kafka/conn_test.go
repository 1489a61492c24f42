package kafka

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadFrameBody(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320,000 bytes: several doublings
	for _, tc := range []struct {
		name    string
		size    int
		sent    int
		wantErr error
	}{
		{"small", 100, 100, nil},
		{"chunk", frameChunkBytes, frameChunkBytes, nil},
		{"large", len(body), len(body), nil},
		{"small truncated", 100, 10, io.ErrUnexpectedEOF},
		{"large truncated", 100 << 20, 10, io.ErrUnexpectedEOF},
		{"large truncated late", len(body), len(body) - 1, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read at most, as a slow client would send.
			r := iotest.OneByteReader(bytes.NewReader(body[:tc.sent]))
			if tc.sent > 1000 {
				r = iotest.HalfReader(bytes.NewReader(body[:tc.sent]))
			}
			got, err := readFrameBody(r, tc.size)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(got, body[:tc.size]) {
				t.Fatalf("got %d bytes, not the %d sent", len(got), tc.size)
			}
		})
	}
}
