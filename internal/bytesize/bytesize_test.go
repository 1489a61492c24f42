package bytesize

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string // a part of the error; "" for none
	}{
		{"0", 0, ""},
		{"1048576", 1 << 20, ""},
		{"100MiB", 100 << 20, ""},
		{"100Mi", 100 << 20, ""},
		{"100 MiB", 100 << 20, ""},
		{" 2GiB ", 2 << 30, ""},
		{"1.5KiB", 1536, ""},
		{"1TiB", 1 << 40, ""},
		{"125MB", 125_000_000, ""},
		{"125M", 125_000_000, ""},
		{"1.25GB", 1_250_000_000, ""},
		{"10kB", 10_000, ""},
		{"10K", 10_000, ""},
		{"3B", 3, ""},
		{"2e3", 2000, ""},
		{"0.4", 0, ""}, // rounded to whole bytes
		{"", 0, "want a number"},
		{"MiB", 0, "want a number"},
		{"-1", 0, "negative"},
		{"-1MiB", 0, "negative"},
		{"10Gb", 0, `unknown unit "Gb"`}, // bits, not bytes
		{"10mb", 0, `unknown unit "mb"`},
		{"10 MiBs", 0, `unknown unit "MiBs"`},
		{"1..5MiB", 0, "want a number"},
		{"NaN", 0, "unknown unit"},
		{"1e400", 0, "want a number"},
		{"8EiB", 0, "want a number"}, // "8E" is no number
		{"9223372036854775807", 0, "more than"},
		{"8388608TiB", 0, "more than"},
	} {
		got, err := Parse(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrSyntax)):
			t.Errorf("Parse(%q) = %d, %v; want an ErrSyntax naming %q", tc.in, got, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("Parse(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestFlag(t *testing.T) {
	var size, rate int64
	f, r := NewFlag(&size), NewRateFlag(&rate)
	if err := f.Set("64MiB"); err != nil || size != 64<<20 || f.String() != "67108864" {
		t.Errorf("size flag: %v, %d, %q", err, size, f.String())
	}
	if err := f.Set("64MiB/s"); err == nil {
		t.Error("a size flag took a rate")
	}
	if err := r.Set("100MiB/s"); err != nil || rate != 100<<20 {
		t.Errorf("rate flag 100MiB/s: %v, %d", err, rate)
	}
	if err := r.Set("5000"); err != nil || rate != 5000 {
		t.Errorf("rate flag 5000: %v, %d", err, rate)
	}
	// What String prints, Set reads back.
	if err := r.Set(r.String()); err != nil || rate != 5000 {
		t.Errorf("rate flag round trip: %v, %d", err, rate)
	}
	if err := r.Set("-1/s"); err == nil || rate != 5000 {
		t.Errorf("rate flag -1/s: %v, left %d", err, rate)
	}
	if f.Type() != "bytes" || r.Type() != "bytes/s" {
		t.Errorf("types %q, %q", f.Type(), r.Type())
	}
}

// FuzzParse: no input panics, and every accepted one is a size that its
// plain form reads back as.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "100MiB", "1.5 GB", "-1", "1e18", "9e18", "Ki", "1e", "+3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("Parse(%q) = %d", s, v)
		}
		var back int64
		if err := NewFlag(&back).Set(NewFlag(&v).String()); err != nil || back != v {
			t.Fatalf("Parse(%q) = %d, which reads back as %d, %v", s, v, back, err)
		}
	})
}
