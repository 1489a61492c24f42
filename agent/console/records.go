package console

// The message browser's presentation (browse.html): how a record's key,
// value and headers are shown, and what a transaction marker and the
// records it ends are shown as. Pure functions; the HTTP server reads the
// records (agent/httpapi/records.go) and calls them.
//
// A shown value carries at most a cap of text bytes, however large the
// record, so that a page's size is bounded by its row count times the cap
// (Page bounds the sum too):
//
//	encoding  text                                  cap applies to
//	json      the value indented (json.Indent),     the indented text
//	          numbers and strings as written
//	text      the value, invalid UTF-8 replaced     the text
//	hex       two lowercase digits per byte         the digits (cap/2 bytes)
//	null      "" (a null key or value, not empty)   -
//
// "auto" picks json when the whole value parses as JSON, else text when it
// is valid UTF-8, else hex. Size is always the value's own length in
// bytes; Truncated says the text stops at the cap.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Encoding is how a value is shown.
type Encoding string

const (
	EncodingAuto Encoding = "auto"
	EncodingJSON Encoding = "json"
	EncodingText Encoding = "text"
	EncodingHex  Encoding = "hex"
	// EncodingNull is a null key or value (length -1 on the wire), which
	// no choice decodes.
	EncodingNull Encoding = "null"
)

// ParseEncoding reads the browser's decode choice.
func ParseEncoding(s string) (Encoding, error) {
	switch e := Encoding(s); e {
	case EncodingAuto, EncodingJSON, EncodingText, EncodingHex:
		return e, nil
	}
	return "", fmt.Errorf("%q: want auto, json, text or hex", s)
}

// jsonMaxBytes: a value longer than this is not indented as JSON (auto
// shows it as text), so that indenting never costs more than a bounded
// buffer whatever the record's size.
const jsonMaxBytes = 1 << 20

// Shown is a key, value or header value as the browser shows it.
type Shown struct {
	Encoding Encoding `json:"encoding"`
	Text     string   `json:"text"`
	// Size is the length of the value itself, in bytes.
	Size      int  `json:"size"`
	Truncated bool `json:"truncated,omitempty"`
	// Note says why the encoding is not the one asked for.
	Note string `json:"note,omitempty"`
}

// Show decodes b as enc asks, in at most maxBytes bytes of text. A nil b
// is a null; an empty one is an empty text.
func Show(b []byte, enc Encoding, maxBytes int) Shown {
	if b == nil {
		return Shown{Encoding: EncodingNull}
	}
	switch enc {
	case EncodingJSON:
		if s, ok := showJSON(b, maxBytes); ok {
			return s
		}
		s := Show(b, EncodingAuto, maxBytes) // text or hex
		s.Note = "not JSON"
		return s
	case EncodingText:
		s := showText(b, maxBytes)
		if !utf8.Valid(b) {
			s.Note = "not valid UTF-8: invalid bytes shown as U+FFFD"
		}
		return s
	case EncodingHex:
		return showHex(b, maxBytes)
	}
	if s, ok := showJSON(b, maxBytes); ok {
		return s
	}
	if utf8.Valid(b) {
		return showText(b, maxBytes)
	}
	return showHex(b, maxBytes)
}

// ShowKey decodes a key or a header value: text when it is valid UTF-8,
// else hex; keys are not indented, as a row shows them on one line.
func ShowKey(b []byte, maxBytes int) Shown {
	if b == nil {
		return Shown{Encoding: EncodingNull}
	}
	if utf8.Valid(b) {
		return showText(b, maxBytes)
	}
	return showHex(b, maxBytes)
}

// showJSON indents b when the whole of it is one JSON value.
func showJSON(b []byte, maxBytes int) (Shown, bool) {
	if len(b) > jsonMaxBytes || !json.Valid(b) {
		return Shown{}, false
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b), "", "  "); err != nil {
		return Shown{}, false
	}
	text, cut := cutUTF8(out.Bytes(), maxBytes)
	return Shown{Encoding: EncodingJSON, Text: string(text), Size: len(b), Truncated: cut}, true
}

func showText(b []byte, maxBytes int) Shown {
	text, cut := cutUTF8(b, maxBytes)
	return Shown{Encoding: EncodingText, Text: string(bytes.ToValidUTF8(text, []byte("\uFFFD"))), Size: len(b), Truncated: cut}
}

func showHex(b []byte, maxBytes int) Shown {
	n := min(len(b), maxBytes/2)
	return Shown{Encoding: EncodingHex, Text: hex.EncodeToString(b[:n]), Size: len(b), Truncated: n < len(b)}
}

// cutUTF8 is b cut to at most maxBytes, not inside a UTF-8 sequence
// (invalid bytes count as one-byte runes), and whether it was cut.
func cutUTF8(b []byte, maxBytes int) ([]byte, bool) {
	if len(b) <= maxBytes {
		return b, false
	}
	end := 0
	for end < len(b) {
		_, size := utf8.DecodeRune(b[end:])
		if end+size > maxBytes {
			break
		}
		end += size
	}
	return b[:end], true
}

// Header is one record header as shown.
type Header struct {
	Key   string `json:"key"`
	Value Shown  `json:"value"`
}

// Control is a control record: a transaction marker (COMMIT or ABORT) of
// the producer whose transaction it ends.
type Control struct {
	// Type is "COMMIT", "ABORT", or "control type N" for a type Kafka
	// reserves but does not define.
	Type             string `json:"type"`
	CoordinatorEpoch int32  `json:"coordinator_epoch"`
	// Error is set when the record does not decode as a control record.
	Error string `json:"error,omitempty"`
}

// ControlOf decodes a control record's key and value.
func ControlOf(key, value []byte) Control {
	m, err := batch.ParseControlRecord(key, value)
	if err != nil {
		return Control{Type: "invalid", Error: err.Error()}
	}
	switch m.Type {
	case batch.ControlCommit:
		return Control{Type: "COMMIT", CoordinatorEpoch: m.CoordinatorEpoch}
	case batch.ControlAbort:
		return Control{Type: "ABORT", CoordinatorEpoch: m.CoordinatorEpoch}
	}
	return Control{Type: m.Type.String()}
}

// The outcome of a transactional record, as far as the records read show.
const (
	TxnCommitted = "committed"
	TxnAborted   = "aborted"
	// TxnUnknown: no marker of its producer follows it in what was read.
	// The transaction may be open, or its marker lies past the page.
	TxnUnknown = "unknown"
)

// Record is one row of the browser: a record, or a control record
// (Control set, no key or value shown).
type Record struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Timestamp is in Unix milliseconds; LogAppendTime says the broker
	// set it (message.timestamp.type LogAppendTime) rather than the
	// producer.
	Timestamp     int64    `json:"timestamp"`
	LogAppendTime bool     `json:"log_append_time,omitempty"`
	Key           *Shown   `json:"key,omitempty"`
	Value         *Shown   `json:"value,omitempty"`
	Headers       []Header `json:"headers,omitempty"`
	// HeadersLeftOut counts headers past the browser's cap.
	HeadersLeftOut int `json:"headers_left_out,omitempty"`
	// ProducerID is set (not -1) for transactional and idempotent
	// records.
	ProducerID    int64    `json:"producer_id"`
	Transactional bool     `json:"transactional,omitempty"`
	Control       *Control `json:"control,omitempty"`
	// Txn is the outcome of a transactional record that is not a marker:
	// TxnCommitted, TxnAborted or TxnUnknown (TxnOutcomes).
	Txn string `json:"txn,omitempty"`
}

const (
	// headersMax is the most headers a row shows; HeadersLeftOut counts
	// the rest.
	headersMax = 32
	// headerMaxBytes caps each header's key and value text (and the
	// value cap when that is smaller).
	headerMaxBytes = 1024
)

// RecordOf is the row of rec: a control record's marker, or its key,
// value (decoded as decode asks, within valueMaxBytes of text) and
// headers.
func RecordOf(rec *kgo.Record, decode Encoding, valueMaxBytes int) Record {
	r := Record{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
		LogAppendTime: rec.Attrs.TimestampType() == 1, ProducerID: rec.ProducerID, Transactional: rec.Attrs.IsTransactional()}
	if rec.Attrs.IsControl() {
		c := ControlOf(rec.Key, rec.Value)
		r.Control = &c
		return r
	}
	key, value := ShowKey(rec.Key, valueMaxBytes), Show(rec.Value, decode, valueMaxBytes)
	r.Key, r.Value = &key, &value
	for i, h := range rec.Headers {
		if i == headersMax {
			r.HeadersLeftOut = len(rec.Headers) - headersMax
			break
		}
		name, _ := cutUTF8([]byte(h.Key), headerMaxBytes)
		r.Headers = append(r.Headers, Header{Key: string(bytes.ToValidUTF8(name, []byte("\uFFFD"))), Value: ShowKey(h.Value, min(valueMaxBytes, headerMaxBytes))})
	}
	return r
}

// Bytes is what the row weighs against a page's byte cap: the text it
// shows.
func (r *Record) Bytes() int {
	n := 0
	if r.Key != nil {
		n += len(r.Key.Text)
	}
	if r.Value != nil {
		n += len(r.Value.Text)
	}
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value.Text)
	}
	return n
}

// TxnOutcomes learns the transaction markers of the records read and
// tells each transactional record its outcome: that of the first marker
// of its producer, in its partition, at a later offset. Markers are noted
// in offset order within a partition (as a read returns them); they may be
// noted whether or not their rows are shown (a key filter hides markers
// but not what they decide). The zero value is ready to use.
type TxnOutcomes struct {
	// markers by partition and producer, in offset order.
	markers map[txnProducer][]txnMarker
}

type txnProducer struct {
	partition int32
	producer  int64
}

type txnMarker struct {
	offset int64
	commit bool
}

// Note remembers a marker; other control types decide nothing.
func (t *TxnOutcomes) Note(partition int32, producer, offset int64, c Control) {
	if c.Type != "COMMIT" && c.Type != "ABORT" {
		return
	}
	if t.markers == nil {
		t.markers = map[txnProducer][]txnMarker{}
	}
	k := txnProducer{partition, producer}
	t.markers[k] = append(t.markers[k], txnMarker{offset, c.Type == "COMMIT"})
}

// Outcome is the outcome of a transactional record of producer at offset.
func (t *TxnOutcomes) Outcome(partition int32, producer, offset int64) string {
	ms := t.markers[txnProducer{partition, producer}]
	// The first marker past offset: markers were noted in offset order.
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := (lo + hi) / 2
		if ms[mid].offset <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	switch {
	case lo == len(ms):
		return TxnUnknown
	case ms[lo].commit:
		return TxnCommitted
	}
	return TxnAborted
}

// Mark sets Txn on every transactional record of rows that is not a
// marker.
func (t *TxnOutcomes) Mark(rows []Record) {
	for i := range rows {
		if r := &rows[i]; r.Transactional && r.Control == nil {
			r.Txn = t.Outcome(r.Partition, r.ProducerID, r.Offset)
		}
	}
}
