package main

// Parsing of the text the user types for consume and produce: the --from
// offset spec, the --format template and backslash escapes. All of it is
// pure so it is table-tested; nothing here talks to a broker.
//
// Format template: literal text with backslash escapes, plus verbs
//
//	%t topic   %p partition   %o offset   %k key   %v value
//	%T timestamp in Unix milliseconds   %h headers as k=v,k=v   %% a '%'
//
// Escapes (also in --key-separator): \t \n \r \\ \xHH.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	errBadOffsetSpec = errors.New("consume: --from must be earliest, latest, an offset, @<unix-ms> or an RFC3339 time")
	errBadEscape     = errors.New("bad backslash escape")
	errBadFormat     = errors.New("consume: bad --format")
)

type offsetKind int

const (
	offsetEarliest offsetKind = iota // the log start offset
	offsetLatest                     // the high watermark: only records written from now on
	offsetExact                      // a given offset
	offsetTime                       // the first record at or after a timestamp
)

// offsetSpec is a parsed --from value.
type offsetSpec struct {
	kind   offsetKind
	offset int64 // offsetExact
	millis int64 // offsetTime, Unix milliseconds
}

func parseOffsetSpec(s string) (offsetSpec, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "earliest", "beginning":
		return offsetSpec{kind: offsetEarliest}, nil
	case "latest", "end":
		return offsetSpec{kind: offsetLatest}, nil
	}
	if ms, ok := strings.CutPrefix(s, "@"); ok {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil || n < 0 {
			return offsetSpec{}, fmt.Errorf("%w (got %q)", errBadOffsetSpec, s)
		}
		return offsetSpec{kind: offsetTime, millis: n}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return offsetSpec{}, fmt.Errorf("%w (got %q)", errBadOffsetSpec, s)
		}
		return offsetSpec{kind: offsetExact, offset: n}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return offsetSpec{kind: offsetTime, millis: t.UnixMilli()}, nil
	}
	return offsetSpec{}, fmt.Errorf("%w (got %q)", errBadOffsetSpec, s)
}

// resolveStart picks the offset a partition is read from. logStart and end
// come from ListOffsets at start-up; atTime is ListOffsets' answer for the
// spec's timestamp (-1: no record that late). An offset outside the log is
// clamped into [logStart, end] rather than left to the client's reset
// policy: reading from the start because an offset was past the end would
// surprise anyone who asked for "offset 1000 onwards".
func resolveStart(spec offsetSpec, logStart, end, atTime int64) int64 {
	var o int64
	switch spec.kind {
	case offsetEarliest:
		o = logStart
	case offsetLatest:
		o = end
	case offsetExact:
		o = spec.offset
	case offsetTime:
		o = atTime
		if o < 0 {
			o = end
		}
	}
	return max(logStart, min(o, end))
}

// recordFormat renders records for consume. The zero value is the default
// format: "key<TAB>value" when the record has a key, else "value", then a
// newline.
type recordFormat struct {
	parts []formatPart
}

// formatPart is literal text (verb 0) or one verb.
type formatPart struct {
	verb byte
	lit  []byte
}

func parseFormat(s string) (recordFormat, error) {
	if s == "" {
		return recordFormat{}, nil
	}
	var f recordFormat
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			f.parts = append(f.parts, formatPart{lit: lit})
			lit = nil
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b, n, err := decodeEscape(s, i)
			if err != nil {
				return recordFormat{}, fmt.Errorf("%w: %w", errBadFormat, err)
			}
			lit = append(lit, b)
			i += n - 1
		case '%':
			if i+1 >= len(s) {
				return recordFormat{}, fmt.Errorf("%w: %q ends with a lone %%", errBadFormat, s)
			}
			i++
			switch v := s[i]; v {
			case '%':
				lit = append(lit, '%')
			case 't', 'p', 'o', 'k', 'v', 'T', 'h':
				flush()
				f.parts = append(f.parts, formatPart{verb: v})
			default:
				return recordFormat{}, fmt.Errorf("%w: unknown verb %%%c", errBadFormat, v)
			}
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return f, nil
}

// appendRecord appends r rendered in format f to dst.
func (f recordFormat) appendRecord(dst []byte, r *kgo.Record) []byte {
	if f.parts == nil {
		if r.Key != nil {
			dst = append(dst, r.Key...)
			dst = append(dst, '\t')
		}
		dst = append(dst, r.Value...)
		return append(dst, '\n')
	}
	for _, p := range f.parts {
		switch p.verb {
		case 0:
			dst = append(dst, p.lit...)
		case 't':
			dst = append(dst, r.Topic...)
		case 'p':
			dst = strconv.AppendInt(dst, int64(r.Partition), 10)
		case 'o':
			dst = strconv.AppendInt(dst, r.Offset, 10)
		case 'k':
			dst = append(dst, r.Key...)
		case 'v':
			dst = append(dst, r.Value...)
		case 'T':
			dst = strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, h.Key...)
				dst = append(dst, '=')
				dst = append(dst, h.Value...)
			}
		}
	}
	return dst
}

// unescape decodes backslash escapes in s; '%' has no meaning here.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		c, n, err := decodeEscape(s, i)
		if err != nil {
			return "", err
		}
		b.WriteByte(c)
		i += n - 1
	}
	return b.String(), nil
}

// decodeEscape decodes the escape starting at s[i] == '\\' and returns the
// byte and how many bytes of s it used.
func decodeEscape(s string, i int) (byte, int, error) {
	if i+1 >= len(s) {
		return 0, 0, fmt.Errorf("%w: trailing backslash", errBadEscape)
	}
	switch s[i+1] {
	case 't':
		return '\t', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case '\\':
		return '\\', 2, nil
	case 'x':
		if i+4 > len(s) {
			return 0, 0, fmt.Errorf("%w: \\x needs two hex digits", errBadEscape)
		}
		v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: \\x%s", errBadEscape, s[i+2:i+4])
		}
		return byte(v), 4, nil
	}
	return 0, 0, fmt.Errorf("%w: \\%c", errBadEscape, s[i+1])
}
