package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseOffsetSpec(t *testing.T) {
	ts := time.Date(2026, 1, 2, 15, 4, 5, 678_000_000, time.UTC)
	tests := []struct {
		in      string
		want    offsetSpec
		wantErr bool
	}{
		{"earliest", offsetSpec{kind: offsetEarliest}, false},
		{"Beginning", offsetSpec{kind: offsetEarliest}, false},
		{"latest", offsetSpec{kind: offsetLatest}, false},
		{" end ", offsetSpec{kind: offsetLatest}, false},
		{"0", offsetSpec{kind: offsetExact, offset: 0}, false},
		{"1234567890123", offsetSpec{kind: offsetExact, offset: 1234567890123}, false},
		{"@0", offsetSpec{kind: offsetTime, millis: 0}, false},
		{"@1767366245678", offsetSpec{kind: offsetTime, millis: 1767366245678}, false},
		{"2026-01-02T15:04:05.678Z", offsetSpec{kind: offsetTime, millis: ts.UnixMilli()}, false},
		{"2026-01-02T16:04:05.678+01:00", offsetSpec{kind: offsetTime, millis: ts.UnixMilli()}, false},
		{"2026-01-02T15:04:05Z", offsetSpec{kind: offsetTime, millis: ts.Truncate(time.Second).UnixMilli()}, false},
		{"-1", offsetSpec{}, true},
		{"@-5", offsetSpec{}, true},
		{"@", offsetSpec{}, true},
		{"@12x", offsetSpec{}, true},
		{"99999999999999999999", offsetSpec{}, true},
		{"2026-01-02", offsetSpec{}, true},
		{"oldest", offsetSpec{}, true},
		{"", offsetSpec{}, true},
	}
	for _, tc := range tests {
		got, err := parseOffsetSpec(tc.in)
		if tc.wantErr {
			if !errors.Is(err, errBadOffsetSpec) {
				t.Errorf("parseOffsetSpec(%q) = %+v, %v; want errBadOffsetSpec", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseOffsetSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestResolveStart(t *testing.T) {
	const logStart, end = 100, 200
	tests := []struct {
		name   string
		spec   offsetSpec
		atTime int64
		want   int64
	}{
		{"earliest", offsetSpec{kind: offsetEarliest}, -1, logStart},
		{"latest", offsetSpec{kind: offsetLatest}, -1, end},
		{"exact inside", offsetSpec{kind: offsetExact, offset: 150}, -1, 150},
		{"exact below log start is clamped up", offsetSpec{kind: offsetExact, offset: 3}, -1, logStart},
		{"exact past end is clamped down", offsetSpec{kind: offsetExact, offset: 1 << 40}, -1, end},
		{"exact at end", offsetSpec{kind: offsetExact, offset: end}, -1, end},
		{"time found", offsetSpec{kind: offsetTime, millis: 5}, 170, 170},
		{"time after every record", offsetSpec{kind: offsetTime, millis: 5}, -1, end},
		{"time answer below log start", offsetSpec{kind: offsetTime, millis: 5}, 10, logStart},
	}
	for _, tc := range tests {
		if got := resolveStart(tc.spec, logStart, end, tc.atTime); got != tc.want {
			t.Errorf("%s: resolveStart = %d, want %d", tc.name, got, tc.want)
		}
	}
	// An empty partition starts (and ends) at its one offset whatever was asked.
	for _, k := range []offsetKind{offsetEarliest, offsetLatest, offsetExact, offsetTime} {
		if got := resolveStart(offsetSpec{kind: k, offset: 9}, 7, 7, -1); got != 7 {
			t.Errorf("empty partition, kind %d: got %d, want 7", k, got)
		}
	}
}

func TestFormatRecord(t *testing.T) {
	rec := &kgo.Record{
		Topic: "orders", Partition: 3, Offset: 42,
		Key: []byte("k1"), Value: []byte("v 1"),
		Timestamp: time.UnixMilli(1767366245678),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}},
	}
	keyless := &kgo.Record{Topic: "orders", Value: []byte("only")}
	emptyKey := &kgo.Record{Topic: "orders", Key: []byte{}, Value: []byte("v")}
	tests := []struct {
		format string
		rec    *kgo.Record
		want   string
	}{
		{"", rec, "k1\tv 1\n"},
		{"", keyless, "only\n"},
		{"", emptyKey, "\tv\n"},
		{`%k\t%v\n`, rec, "k1\tv 1\n"},
		{`%t/%p@%o %T [%h]\n`, rec, "orders/3@42 1767366245678 [a=1,b=]\n"},
		{`[%h]`, keyless, "[]"},
		{`100%% %v`, rec, "100% v 1"},
		{`\x41\\%k\r\n`, rec, "A\\k1\r\n"},
		{`no verbs`, rec, "no verbs"},
		{`%k=%v;`, keyless, "=only;"},
	}
	for _, tc := range tests {
		f, err := parseFormat(tc.format)
		if err != nil {
			t.Errorf("parseFormat(%q): %v", tc.format, err)
			continue
		}
		if got := string(f.appendRecord([]byte("prefix:"), tc.rec)); got != "prefix:"+tc.want {
			t.Errorf("format %q: got %q, want %q", tc.format, got, "prefix:"+tc.want)
		}
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, in := range []string{`%`, `abc%`, `%x`, `%K`, `\`, `\q`, `\x4`, `\xZZ`} {
		if _, err := parseFormat(in); !errors.Is(err, errBadFormat) {
			t.Errorf("parseFormat(%q) error = %v, want errBadFormat", in, err)
		}
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{`\t`, "\t", false},
		{"\t", "\t", false},
		{``, "", false},
		{`::`, "::", false},
		{`a\nb\rc\\d\x00e%`, "a\nb\rc\\d\x00e%", false},
		{`\x7c`, "|", false},
		{`\`, "", true},
		{`\u0041`, "", true},
		{`\x1`, "", true},
	}
	for _, tc := range tests {
		got, err := unescape(tc.in)
		if tc.wantErr != (err != nil) || got != tc.want {
			t.Errorf("unescape(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !errors.Is(err, errBadEscape) {
			t.Errorf("unescape(%q) error %v is not errBadEscape", tc.in, err)
		}
	}
}

// FuzzParseFormat checks that no template crashes the parser or renderer, and
// that a template without '%' or '\' renders as itself.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"", `%k\t%v\n`, `%t %p %o %T %h %%`, `\x41`, `%`, `\`, "plain"} {
		f.Add(s)
	}
	rec := &kgo.Record{Topic: "t", Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	f.Fuzz(func(t *testing.T, s string) {
		fm, err := parseFormat(s)
		if err != nil {
			return
		}
		out := fm.appendRecord(nil, rec)
		if s != "" && !strings.ContainsAny(s, `%\`) && string(out) != s {
			t.Fatalf("literal template %q rendered as %q", s, out)
		}
	})
}
