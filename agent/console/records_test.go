package console

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShow(t *testing.T) {
	big := `{"id":7,"name":"` + strings.Repeat("é", 40) + `"}` // 2-byte runes to cut
	for _, c := range []struct {
		name  string
		in    []byte
		enc   Encoding
		max   int
		want  Shown
		wantS string // a prefix of Text, when Text is long
	}{
		{"null", nil, EncodingAuto, 64, Shown{Encoding: EncodingNull}, ""},
		{"empty is text", []byte{}, EncodingAuto, 64, Shown{Encoding: EncodingText, Text: ""}, ""},
		{"auto JSON is indented", []byte(`{"a":1,"b":[true,null]}`), EncodingAuto, 64,
			Shown{Encoding: EncodingJSON, Text: "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}", Size: 23}, ""},
		{"JSON numbers as written", []byte(`{"n":12345678901234567890.50}`), EncodingAuto, 64,
			Shown{Encoding: EncodingJSON, Text: "{\n  \"n\": 12345678901234567890.50\n}", Size: 29}, ""},
		{"auto text", []byte("hello, wörld"), EncodingAuto, 64, Shown{Encoding: EncodingText, Text: "hello, wörld", Size: 13}, ""},
		{"auto binary is hex", []byte{0xff, 0x00, 0x10}, EncodingAuto, 64, Shown{Encoding: EncodingHex, Text: "ff0010", Size: 3}, ""},
		{"json asked, not JSON", []byte("plain"), EncodingJSON, 64, Shown{Encoding: EncodingText, Text: "plain", Size: 5, Note: "not JSON"}, ""},
		{"json asked, binary", []byte{0xc3}, EncodingJSON, 64, Shown{Encoding: EncodingHex, Text: "c3", Size: 1, Note: "not JSON"}, ""},
		{"text asked, JSON stays compact", []byte(`{"a":1}`), EncodingText, 64, Shown{Encoding: EncodingText, Text: `{"a":1}`, Size: 7}, ""},
		{"text asked, invalid UTF-8", []byte{'a', 0xff, 'b'}, EncodingText, 64,
			Shown{Encoding: EncodingText, Text: "a\uFFFDb", Size: 3, Note: "not valid UTF-8: invalid bytes shown as U+FFFD"}, ""},
		{"hex asked", []byte("AB"), EncodingHex, 64, Shown{Encoding: EncodingHex, Text: "4142", Size: 2}, ""},
		{"hex truncated to cap/2 bytes", []byte("ABCDEF"), EncodingHex, 5, Shown{Encoding: EncodingHex, Text: "4142", Size: 6, Truncated: true}, ""},
		{"text truncated on a rune boundary", []byte("aéé"), EncodingText, 4, Shown{Encoding: EncodingText, Text: "aé", Size: 5, Truncated: true}, ""},
		{"text exactly the cap", []byte("abcd"), EncodingAuto, 4, Shown{Encoding: EncodingText, Text: "abcd", Size: 4}, ""},
		// The whole value decides it is JSON; the indented text is cut.
		{"JSON truncated after indenting", []byte(big), EncodingAuto, 31, Shown{Encoding: EncodingJSON, Size: len(big), Truncated: true}, "{\n  \"id\": 7,\n  \"name\": \"éé"},
	} {
		got := Show(c.in, c.enc, c.max)
		if c.wantS != "" {
			if !strings.HasPrefix(got.Text, c.wantS) || len(got.Text) > c.max || !utf8.ValidString(got.Text) {
				t.Errorf("%s: text %q, want it to start %q, at most %d bytes, valid UTF-8", c.name, got.Text, c.wantS, c.max)
			}
			got.Text = ""
		}
		if got != c.want {
			t.Errorf("%s: Show = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestShowKey(t *testing.T) {
	if got := ShowKey([]byte(`{"k":1}`), 64); got.Encoding != EncodingText || got.Text != `{"k":1}` {
		t.Errorf("a JSON key: %+v, want it as text on one line", got)
	}
	if got := ShowKey([]byte{0x80, 0x81}, 64); got.Encoding != EncodingHex || got.Text != "8081" {
		t.Errorf("a binary key: %+v", got)
	}
	if got := ShowKey(nil, 64); got.Encoding != EncodingNull {
		t.Errorf("a null key: %+v", got)
	}
}

// FuzzShow: whatever the bytes and choice, the text is valid UTF-8 within
// the cap, Size is the input's length, and an untruncated text or hex
// gives the input back.
func FuzzShow(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c"}]}`), "auto", 16)
	f.Add([]byte{0xff, 0xfe, 'x'}, "text", 2)
	f.Add([]byte("héllo"), "hex", 3)
	f.Fuzz(func(t *testing.T, b []byte, enc string, maxBytes int) {
		e, err := ParseEncoding(enc)
		if err != nil || maxBytes < 0 || maxBytes > 1<<16 {
			return
		}
		s := Show(b, e, maxBytes)
		if len(s.Text) > maxBytes+2 || !utf8.ValidString(s.Text) || s.Size != len(b) {
			t.Fatalf("Show(%q, %s, %d) = %+v", b, e, maxBytes, s)
		}
		if !s.Truncated && s.Note == "" && (s.Encoding == EncodingText && s.Text != string(b) || s.Encoding == EncodingHex && s.Text != fmt.Sprintf("%x", b)) {
			t.Fatalf("Show(%q, %s, %d) = %+v: not the input", b, e, maxBytes, s)
		}
	})
}

func controlKV(typ int16, epoch int32) (key, value []byte) {
	key = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	value = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(epoch))
	return key, value
}

func TestControlOf(t *testing.T) {
	k, v := controlKV(1, 5)
	if got := ControlOf(k, v); got != (Control{Type: "COMMIT", CoordinatorEpoch: 5}) {
		t.Errorf("commit: %+v", got)
	}
	k, v = controlKV(0, 2)
	if got := ControlOf(k, v); got != (Control{Type: "ABORT", CoordinatorEpoch: 2}) {
		t.Errorf("abort: %+v", got)
	}
	k, _ = controlKV(7, 0)
	if got := ControlOf(k, nil); got.Type != "control type 7" || got.Error != "" {
		t.Errorf("an undefined type: %+v", got)
	}
	if got := ControlOf([]byte{0}, nil); got.Type != "invalid" || got.Error == "" {
		t.Errorf("a short key: %+v", got)
	}
}

// TestTxnOutcomes: a transactional record takes the outcome of the first
// marker of its producer, in its partition, after it; without one it is
// unknown (open, or its marker is past what was read).
func TestTxnOutcomes(t *testing.T) {
	commit, abort := Control{Type: "COMMIT"}, Control{Type: "ABORT"}
	// Partition 0, by offset: producers 12 and 13 interleave; 12 aborts
	// at 3 and commits at 6; 13 commits at 4; 14 never ends. Partition 1
	// has producer 12 too, ending nowhere.
	rows := []Record{
		{Partition: 0, Offset: 0, ProducerID: 12, Transactional: true},
		{Partition: 0, Offset: 1, ProducerID: 13, Transactional: true},
		{Partition: 0, Offset: 2, ProducerID: 12, Transactional: true},
		{Partition: 0, Offset: 3, ProducerID: 12, Transactional: true, Control: &abort},
		{Partition: 0, Offset: 4, ProducerID: 13, Transactional: true, Control: &commit},
		{Partition: 0, Offset: 5, ProducerID: 12, Transactional: true},
		{Partition: 0, Offset: 6, ProducerID: 12, Transactional: true, Control: &commit},
		{Partition: 0, Offset: 7, ProducerID: 14, Transactional: true},
		{Partition: 0, Offset: 8, ProducerID: -1},
		{Partition: 0, Offset: 9, ProducerID: 12, Transactional: true, Control: &Control{Type: "control type 5"}},
		{Partition: 0, Offset: 10, ProducerID: 12, Transactional: true},
		{Partition: 1, Offset: 0, ProducerID: 12, Transactional: true},
	}
	var o TxnOutcomes
	for _, r := range rows {
		if r.Control != nil {
			o.Note(r.Partition, r.ProducerID, r.Offset, *r.Control)
		}
	}
	o.Mark(rows)
	want := []string{TxnAborted, TxnCommitted, TxnAborted, "", "", TxnCommitted, "", TxnUnknown, "", "", TxnUnknown, TxnUnknown}
	for i, r := range rows {
		if r.Txn != want[i] {
			t.Errorf("partition %d offset %d (producer %d): %q, want %q", r.Partition, r.Offset, r.ProducerID, r.Txn, want[i])
		}
	}
}

// TestCollector: a page keeps the first or the last rows in its order,
// within its row limit and byte cap, and gives them back in order.
func TestCollector(t *testing.T) {
	row := func(p int32, off, ts int64, value string) Record {
		return Record{Partition: p, Offset: off, Timestamp: ts, Value: &Shown{Text: value}}
	}
	offsets := func(rows []Record) string {
		var s []string
		for _, r := range rows {
			s = append(s, fmt.Sprintf("%d:%d", r.Partition, r.Offset))
		}
		return strings.Join(s, " ")
	}
	first := NewCollector(ByOffset, true, 3, 1<<20)
	for off := range int64(6) {
		first.Add(row(0, off, 0, "v"))
	}
	if got := offsets(first.Rows()); got != "0:0 0:1 0:2" || first.Dropped() != 3 || first.BytesFull() {
		t.Errorf("first 3 of 6: %s, dropped %d", got, first.Dropped())
	}
	last := NewCollector(ByOffset, false, 3, 1<<20)
	for off := range int64(6) {
		last.Add(row(0, off, 0, "v"))
	}
	if got := offsets(last.Rows()); got != "0:3 0:4 0:5" {
		t.Errorf("last 3 of 6: %s", got)
	}
	// Two partitions merged by time, arriving partition by partition.
	merged := NewCollector(ByTime, true, 4, 1<<20)
	for _, r := range []Record{row(0, 0, 10, ""), row(0, 1, 30, ""), row(0, 2, 50, ""), row(1, 0, 20, ""), row(1, 1, 40, ""), row(1, 2, 60, "")} {
		merged.Add(r)
	}
	if got := offsets(merged.Rows()); got != "0:0 1:0 0:1 1:1" {
		t.Errorf("merged by time: %s", got)
	}
	// The byte cap: 10 bytes of text, rows of 4 bytes: two fit.
	bytesCap := NewCollector(ByOffset, true, 100, 10)
	var kept []bool
	for off := range int64(4) {
		kept = append(kept, bytesCap.Add(row(0, off, 0, "abcd")))
	}
	if got := offsets(bytesCap.Rows()); got != "0:0 0:1" || !bytesCap.BytesFull() || fmt.Sprint(kept) != "[true true false false]" {
		t.Errorf("byte cap: %s, bytes full %v, kept %v", got, bytesCap.BytesFull(), kept)
	}
	// A row larger than the cap alone is still shown.
	one := NewCollector(ByOffset, true, 100, 2)
	one.Add(row(0, 0, 0, "too long"))
	if one.Len() != 1 {
		t.Errorf("a page with one row over the cap keeps %d", one.Len())
	}
}
